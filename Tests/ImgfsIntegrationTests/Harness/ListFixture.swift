import Foundation
import ImgfsTestSupport

/// A mount, an origin serving `count` small PNGs at `/v/<i>.png` (after `delay` seconds), and helpers to add lists.
final class ListFixture {
    let origin: TestOrigin
    let mount: MountedImgfs
    let icons: [[UInt8]]

    init(
        count: Int = 0, delay: Double = 0, mountArguments: [String] = [], cacheDirectory: String? = nil,
        environment: [String: String]? = nil
    ) throws {
        origin = try TestOrigin()
        icons = try Fixtures.smallPNGs(8)
        let icons = icons
        origin.route(prefix: "/v/") { request in
            let index = Int(request.path.dropFirst(3).prefix { $0.isNumber }) ?? 0
            var response = OriginResponse.ok(icons[index % icons.count], contentType: "image/png")
            response.headerDelay = delay
            return response
        }
        do {
            mount = try MountedImgfs(
                arguments: mountArguments, cacheDirectory: cacheDirectory, environment: environment)
        } catch {
            origin.stop()
            throw error
        }
    }

    func stop() {
        mount.stop()
        origin.stop()
    }

    /// The URL of image `index` of the origin's numbered images.
    func url(_ index: Int) -> String { "\(origin.baseURL)/v/\(index).png" }

    /// Runs `imgfs list add` with `text` as the list file.
    @discardableResult
    func add(_ name: String, _ text: String, extra: [String] = []) throws -> (status: Int32, output: String) {
        let file = "\(mount.root)/list-\(UUID().uuidString.prefix(6)).txt"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return try ChildProcess.run(MountedImgfs.binary, ["list", "add"] + extra + [mount.mountPoint, name, file])
    }

    /// The counters of list `name` in `.imgfs/stats.json` (`lists[].counters`).
    func counters(_ name: String) -> [String: Int] {
        statisticsCounters("lists", key: "name", value: name)
    }

    /// The counters of the origin's host in `.imgfs/stats.json` (`hosts[].counters`).
    func hostCounters() -> [String: Int] {
        statisticsCounters("hosts", key: "host", value: "127.0.0.1:\(origin.port)")
    }

    private func statisticsCounters(_ section: String, key: String, value: String) -> [String: Int] {
        guard let data = FileManager.default.contents(atPath: "\(mount.mountPoint)/.imgfs/stats.json"),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let items = object[section] as? [[String: Any]],
            let item = items.first(where: { $0[key] as? String == value })
        else { return [:] }
        return (item["counters"] as? [String: Int]) ?? [:]
    }

    /// The names `ls` prints for a directory under the mount.
    func ls(_ relative: String) throws -> [String] {
        let run = try ChildProcess.run("/bin/ls", ["\(mount.mountPoint)/\(relative)"])
        return run.output.split(separator: "\n").map(String.init)
    }
}
