import Foundation
import ImgfsTestSupport

/// What Pillow (without plugins) sees of an image, for the variant and format-view tests: the script that draws the
/// two-colour test image, and the one that prints an image's format, size, JPEG coding and pixels.
enum PillowProbe {
    /// Draws a 600 x 400 image at argv[1]: the left half red, the right half blue (a turned or mirrored copy shows it).
    static let halves = """
        from PIL import Image
        import sys
        image = Image.new('RGB', (600, 400), (0, 0, 255))
        image.paste((255, 0, 0), (0, 0, 300, 400))
        image.save(sys.argv[1])
        """

    /// Prints `<format> <width> <height> <SOF> <r,g,b at each point>` of the image at argv[1] as Pillow decodes it
    /// (SOF: baseline, progressive or none); points are argv[2...] as `x,y`.
    static let inspect = """
        import sys
        from PIL import Image
        data = open(sys.argv[1], 'rb').read()
        image = Image.open(sys.argv[1])
        image.load()
        sof = 'none'
        if data[:2] == b'\\xff\\xd8':
            i = 2
            while i + 4 <= len(data):
                marker = data[i + 1]
                if marker in (0xc0, 0xc1, 0xc2):
                    sof = 'baseline' if marker != 0xc2 else 'progressive'
                    break
                i += 2 + int.from_bytes(data[i + 2:i + 4], 'big')
        points = []
        for point in sys.argv[2:]:
            x, y = (int(v) for v in point.split(','))
            points.append(','.join(str(c) for c in image.convert('RGB').getpixel((x, y))))
        print(image.format, image.size[0], image.size[1], sof, *points)
        """

    /// Runs `script` with `arguments`: its output trimmed, or `failed: <output>`.
    static func run(_ script: String, _ arguments: [String]) throws -> String {
        let result = try ChildProcess.run("/usr/bin/python3", ["-c", script] + arguments, timeout: 60)
        return result.status == 0
            ? result.output.trimmingCharacters(in: .whitespacesAndNewlines) : "failed: \(result.output)"
    }
}
