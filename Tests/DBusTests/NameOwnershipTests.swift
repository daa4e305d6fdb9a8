import DBus
import Foundation
import Testing
import TetherTestSupport

extension DBusIntegrationTests {
    /// Requesting and releasing well-known names, queueing and replacement, and NameOwnerChanged.
    @Suite struct NameOwnership {
        static let name = "com.example.Owned"

        @Test func ownershipPassesAlongTheQueueAndIsReported() async throws {
            try await withPrivateBus { bus, first in
                let second = try await DBusConnection.connect(to: .address(bus.address))
                let changes = try await first.nameOwnerChanges(of: Self.name)

                #expect(try await first.requestName(Self.name, flags: [.doNotQueue]) == .primaryOwner)
                #expect(try await first.requestName(Self.name) == .alreadyOwner)
                #expect(try await second.requestName(Self.name, flags: [.doNotQueue]) == .exists)
                #expect(try await second.requestName(Self.name, flags: [.replaceExisting, .doNotQueue]) == .exists,
                        "the owner did not allow replacement")
                #expect(try await second.requestName(Self.name) == .inQueue)
                #expect(try await first.nameOwner(of: Self.name) == first.uniqueName)

                // gdbus agrees on who owns the name.
                let query = try await ChildProcess.run(
                    "/usr/bin/gdbus",
                    ["call", "--address", bus.address, "--dest", "org.freedesktop.DBus",
                     "--object-path", "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.GetNameOwner",
                     Self.name])
                #expect(query.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "('\(first.uniqueName)',)")

                #expect(try await first.releaseName(Self.name) == .released)
                #expect(try await first.releaseName(Self.name) == .notOwner)
                #expect(try await first.releaseName("com.example.NeverOwned") == .nonExistent)
                #expect(try await first.nameOwner(of: Self.name) == second.uniqueName)
                #expect(try await first.listNames().contains(Self.name))

                await second.close()
                let observed = try await collect(3, from: changes)
                #expect(observed == [
                    DBusNameOwnerChange(name: Self.name, oldOwner: nil, newOwner: first.uniqueName),
                    DBusNameOwnerChange(name: Self.name, oldOwner: first.uniqueName, newOwner: second.uniqueName),
                    DBusNameOwnerChange(name: Self.name, oldOwner: second.uniqueName, newOwner: nil),
                ])
                #expect(try await first.nameOwner(of: Self.name) == nil)
            }
        }

        @Test func replacementWhenTheOwnerAllowsIt() async throws {
            try await withPrivateBus { bus, first in
                let second = try await DBusConnection.connect(to: .address(bus.address))
                let lost = try await first.signals(
                    matching: DBusMatchRule(sender: "org.freedesktop.DBus", member: "NameLost"))
                #expect(try await first.requestName(Self.name, flags: [.allowReplacement]) == .primaryOwner)
                #expect(try await second.requestName(Self.name, flags: [.replaceExisting]) == .primaryOwner)
                #expect(try await second.nameOwner(of: Self.name) == second.uniqueName)
                let notice = try await collect(1, from: lost)
                #expect(notice.first?.arguments == [.string(Self.name)])
                #expect(notice.first?.destination == first.uniqueName)
                await second.close()
            }
        }

        @Test func invalidNamesAreRefusedLocally() async throws {
            try await withPrivateBus { _, connection in
                await #expect(throws: DBusError(.invalidArgs, "")) {
                    _ = try await connection.requestName("nodots")
                }
                await #expect(throws: DBusError(.invalidArgs, "")) {
                    _ = try await connection.nameOwnerChanges(of: "bad..name")
                }
            }
        }
    }
}
