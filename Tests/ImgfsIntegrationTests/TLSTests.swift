import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// HTTPS against a real nginx on 127.0.0.1 with a self-signed certificate: TLS is verified unless --insecure, and
/// HTTP/2 is used where the origin offers it.
@Suite("TLS and HTTP/2", .serialized, .enabled(if: FuseAvailability.available))
struct TLSTests {
    /// nginx serving `files` over TLS with HTTP/2 (and whatever `locations` adds), logging each request's protocol
    /// (and, in `connections`, the connection it came on).
    final class TLSOrigin {
        let root = "/tmp/imgfs-tls-\(getpid())-\(UUID().uuidString.prefix(8))"
        let port: Int
        var process: ChildProcess?

        init(files: [String: [UInt8]], locations: String = "", http2: Bool = true) throws {
            port = try RedisServer.freePort()
            try FileManager.default.createDirectory(atPath: root + "/www", withIntermediateDirectories: true)
            for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: "\(root)/www/\(name)")) }
            let certificate = try ChildProcess.run(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "\(root)/key.pem", "-out", "\(root)/cert.pem"
                ])
            guard certificate.status == 0 else { throw MountedImgfs.StartFailure(description: certificate.output) }
            let configuration = """
                pid \(root)/nginx.pid;
                error_log \(root)/error.log;
                events {}
                http {
                    access_log \(root)/access.log combined;
                    log_format protocol '$request_uri $server_protocol $status';
                    log_format connection '$request_uri $server_protocol $connection $msec $request_time';
                    server {
                        listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
                        keepalive_requests 100000;
                        ssl_certificate \(root)/cert.pem;
                        ssl_certificate_key \(root)/key.pem;
                        root \(root)/www;
                        access_log \(root)/protocol.log protocol;
                        access_log \(root)/connection.log connection;
                        \(locations)
                    }
                }
                """
            try configuration.write(toFile: "\(root)/nginx.conf", atomically: true, encoding: .utf8)
            process = try ChildProcess.spawn(
                "/usr/sbin/nginx", ["-c", "\(root)/nginx.conf", "-p", root, "-g", "daemon off;"],
                outputPath: "\(root)/nginx.out")
            Poll.until { TCPProbe.accepts(host: "127.0.0.1", port: UInt16(port)) || process?.isRunning != true }
        }

        var baseURL: String { "https://127.0.0.1:\(port)" }
        var requests: [String] {
            ((try? String(contentsOfFile: "\(root)/protocol.log", encoding: .utf8)) ?? "").split(separator: "\n").map(
                String.init)
        }

        /// `$request_uri $server_protocol $connection $msec $request_time` of each request served (logged at its end).
        var connections: [String] {
            ((try? String(contentsOfFile: "\(root)/connection.log", encoding: .utf8)) ?? "").split(separator: "\n").map(
                String.init)
        }

        /// The requests served, each split into those five fields, once at least `count` are logged (nginx logs a
        /// request once it has sent the answer: the last lines may come a moment after the reads end).
        func servedRequests(atLeast count: Int) -> [[String]] {
            Poll.until(timeout: 5) { connections.count >= count }
            return connections.map { $0.split(separator: " ").map(String.init) }
        }

        /// The connections `requests` (from ``servedRequests(atLeast:)``) came on.
        static func connectionIDs(_ requests: [[String]]) -> Set<String> {
            Set(requests.compactMap { $0.count == 5 ? $0[2] : nil })
        }

        func stop() {
            process?.signal(SIGTERM)
            if process?.wait(timeout: 5) == nil { process?.kill9AndReap() }
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    @Test(
        "a self-signed certificate is refused (EIO, logged); --insecure gets the image over HTTP/2, with a warning"
    )
    func verificationAndHTTP2() throws {
        let image = try Fixtures.mediumJPEG()
        let origin = try TLSOrigin(files: ["a.jpg": image])
        defer { origin.stop() }
        #expect(origin.process?.isRunning == true, "nginx started")
        do {
            let strict = try MountedImgfs(arguments: ["--tune", "retries=0"])
            defer { strict.stop() }
            #expect(PosixFile.read(strict.path(origin.baseURL + "/a.jpg")) == .failure(Errno(EIO)))
            #expect(strict.log.contains("certificate"), "the log says the certificate was refused")
        }
        let lenient = try MountedImgfs(arguments: ["--insecure"])
        defer { lenient.stop() }
        #expect(lenient.log.contains("--insecure: TLS certificates and host names are NOT verified"))
        #expect(PosixFile.read(lenient.path(origin.baseURL + "/a.jpg")) == .success(image))
        #expect(origin.requests.contains("/a.jpg HTTP/2.0 200"), "served over HTTP/2: \(origin.requests)")
    }

    @Test("--ca-file trusts a private CA: the certificate is verified against it, not skipped")
    func privateCertificateAuthority() throws {
        let image = try Fixtures.mediumJPEG()
        let origin = try TLSOrigin(files: ["b.jpg": image])
        defer { origin.stop() }
        let trusting = try MountedImgfs(arguments: ["--tune", "retries=0", "--ca-file", "\(origin.root)/cert.pem"])
        defer { trusting.stop() }
        #expect(PosixFile.read(trusting.path(origin.baseURL + "/b.jpg")) == .success(image))
        #expect(!trusting.log.contains("NOT verified"), "verification stays on")
        // The same certificate under a host name it does not name is still refused: verification is on.
        let misnamed = "https://localhost:\(origin.port)/b.jpg"
        #expect(PosixFile.read(trusting.path(misnamed)) == .failure(Errno(EIO)))
        let missing = try ChildProcess.run(
            MountedImgfs.binary, ["mount", "--ca-file", "/nonexistent/ca.pem", trusting.root + "/unused"])
        #expect(missing.status != 0 && missing.output.contains("--ca-file"), "\(missing.output)")
    }
}
