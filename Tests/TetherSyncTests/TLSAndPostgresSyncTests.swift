import Foundation
import SyncContract
import Testing
import TetherServer
import TetherStore
import TetherSync
import TetherSyncTesting
import TetherTestSupport

@Suite("sync over HTTPS with a configured CA")
struct TLSSyncTests {
    @Test("a gateway trusting the server's CA syncs; one that does not fails as a network error and keeps its commands")
    func https() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificate = directory + "/cert.pem"
        let key = directory + "/key.pem"
        let openssl = try await ChildProcess.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        try #require(openssl.status == 0, "openssl: \(openssl.standardOutput)\(openssl.standardError)")
        try await withSync(configureServer: { $0.tls = .init(certificatePath: certificate, privateKeyPath: key) }) { setup in
            try setup.gateway.storeEvents(20, devices: 1)
            let untrusting = try setup.engine()
            let refused = await untrusting.sync(trigger: .manual)
            #expect(refused.failure?.kind == .network)
            #expect(try outboxCommands(setup) == 21)
            await untrusting.shutdown()
            let trusting = try setup.engine { $0.caCertificatePath = certificate }
            let report = await trusting.sync(trigger: .manual)
            #expect(report.succeeded, "\(String(describing: report.failure))")
            #expect(try await setup.server.store.statistics(tenant: setup.tenant).events == 20)
            await trusting.shutdown()
        }
    }
}
