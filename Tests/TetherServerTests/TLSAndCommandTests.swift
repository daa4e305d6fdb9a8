import AsyncHTTPClient
import ArgumentParser
import Foundation
import NIOSSL
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting
import TetherTestSupport

/// A self-signed certificate for 127.0.0.1, made with the openssl command.
func makeCertificate(in directory: String) async throws -> (certificate: String, key: String) {
    let certificate = directory + "/cert.pem"
    let key = directory + "/key.pem"
    let openssl = try await ChildProcess.run("/usr/bin/openssl", [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
    ])
    guard openssl.status == 0 else { throw ChildProcess.Failure("openssl: \(openssl.standardError)") }
    return (certificate, key)
}

@Suite("TLS and the command line")
struct TLSAndCommandTests {
    @Test("with a certificate the server speaks HTTPS; a client trusting that CA gets through, one that does not is refused")
    func tls() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (certificate, key) = try await makeCertificate(in: directory)
        let server = try await TestServer.start(storage: .sqlite(path: directory + "/s.sqlite")) {
            $0.tls = .init(certificatePath: certificate, privateKeyPath: key)
        }
        defer { Task { await server.stop() } }
        #expect(server.baseURL.hasPrefix("https://"))
        let token = try await server.token(tenant: "t", gateway: "g")
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificate))
        let trusting = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: tls))
        var request = HTTPClientRequest(url: server.baseURL + SyncAPI.changesPath)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        let response = try await trusting.execute(request, timeout: .seconds(10))
        #expect(response.status.code == 200)
        try await trusting.shutdown()
        let untrusting = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        await #expect(throws: (any Error).self) { _ = try await untrusting.execute(request, timeout: .seconds(10)) }
        try await untrusting.shutdown()
        await server.stop()
    }

    @Test("the command tree parses, checks its options, and writes token files 0600 without following links")
    func commands() throws {
        let serve = try #require(try ServerCommand.parseAsRoot(["serve", "--db", "x.sqlite", "--listen", "127.0.0.1:0"]) as? ServerCommand.Serve)
        #expect(serve.listen == "127.0.0.1:0")
        #expect(throws: (any Error).self) { try ServerCommand.parseAsRoot(["serve"]) }
        #expect(throws: (any Error).self) { try ServerCommand.parseAsRoot(["serve", "--db", "a", "--postgres", "postgres://u@h/d"]) }
        #expect(throws: (any Error).self) { try ServerCommand.parseAsRoot(["serve", "--db", "a", "--tls-cert", "c.pem"]) }
        #expect(throws: (any Error).self) { try ServerCommand.parseAsRoot(["serve", "--db", "a", "--inject-faults", "teapot"]) }
        #expect(try ServerCommand.parseAsRoot(["token", "create", "--db", "a", "--tenant", "t", "--gateway", "g"]) is ServerCommand.Token.Create)
        #expect(ListenAddress("[::1]:8443")?.port == 8443)
        #expect(ListenAddress("127.0.0.1:0").map { [$0.host, String($0.port)] } == ["127.0.0.1", "0"])
        #expect(ListenAddress("[::1]:8443")?.host == "::1")
        #expect(ListenAddress("nohost") == nil)
        #expect(Fault(spec: "503:2") == .status(503, retryAfterSeconds: 2))
        #expect(Fault(spec: "delay:250ms") == .delay(.milliseconds(250)))
        #expect(Fault(spec: "500-after") == .statusAfterHandling(500))
        #expect(Fault(spec: "drop-after") == .dropAfterHandling)
        #expect(Fault(spec: "200") == nil)

        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gw.token"
        try SecretFile.write("secret\n", to: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(throws: SecretFile.Failure.self) { try SecretFile.write("again", to: path) }
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: directory + "/elsewhere")
        #expect(throws: SecretFile.Failure.self) { try SecretFile.write("x", to: directory + "/link") }
        #expect(!FileManager.default.fileExists(atPath: directory + "/elsewhere"))
    }

    @Test("PostgreSQL URLs: TCP with sslmode, Unix socket directories, and clear refusals")
    func postgresURLs() throws {
        let tcp = try PostgresURL.configuration("postgres://app:pw@db.example:6543/tether?sslmode=disable")
        #expect(tcp.host == "db.example")
        #expect(tcp.port == 6543)
        #expect(tcp.username == "app")
        #expect(tcp.password == "pw")
        #expect(tcp.database == "tether")
        let socket = try PostgresURL.configuration("postgres://app@/tether?host=/tmp/pg")
        #expect(socket.unixSocketPath == "/tmp/pg/.s.PGSQL.5432")
        #expect(throws: PostgresURL.Invalid.self) { try PostgresURL.configuration("mysql://a@b/c") }
        #expect(throws: PostgresURL.Invalid.self) { try PostgresURL.configuration("postgres://app@host/") }
        #expect(throws: PostgresURL.Invalid.self) { try PostgresURL.configuration("postgres://app@host/db?sslmode=sometimes") }
    }
}
