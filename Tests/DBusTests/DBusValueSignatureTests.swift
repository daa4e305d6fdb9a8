import Testing

@testable import DBus

/// Signatures and wire checks of `DBusValue`, without a bus.
@Suite struct DBusValueSignatureTests {
    @Test func signaturesOfEveryType() {
        let fd = OwnedFileDescriptor(taking: -1)
        let cases: [(DBusValue, DBusSignature)] = [
            (.byte(1), "y"), (.bool(true), "b"), (.int16(-1), "n"), (.uint16(1), "q"), (.int32(-1), "i"),
            (.uint32(1), "u"), (.int64(-1), "x"), (.uint64(1), "t"), (.double(0.5), "d"), (.string("a"), "s"),
            (.objectPath("/a"), "o"), (.signature("a{sv}"), "g"), (.unixFD(fd), "h"),
            (.array(elementSignature: "s", []), "as"),
            (.array(elementSignature: "a{sv}", []), "aa{sv}"),
            (.dictionary(keySignature: "q", valueSignature: "v", []), "a{qv}"),
            (.structure([.byte(1), .array(elementSignature: "y", [])]), "(yay)"),
            (.variant(.uint32(1)), "v"),
            (.variantDictionary(["a": .bool(true)]), "a{sv}"),
        ]
        for (value, expected) in cases {
            #expect(value.signature == expected, "\(value)")
        }
    }

    @Test func signatureSplitsIntoCompleteTypes() {
        #expect(DBusSignature("ya{sv}(iai)aay").completeTypes == ["y", "a{sv}", "(iai)", "aay"])
        #expect(DBusSignature("").completeTypes == [])
        #expect(DBusSignature("a{sv").completeTypes == nil)
        #expect(DBusSignature("a{vs}").isValid == false, "dictionary keys must be basic")
        #expect(DBusSignature("()").isValid == false)
        #expect(DBusSignature("(i)").isSingleCompleteType)
        #expect(!DBusSignature("ii").isSingleCompleteType)
        #expect(DBusSignature(String(repeating: "i", count: 256)).isValid == false, "255 is the limit")
    }

    @Test func objectPathRules() {
        for valid in ["/", "/a", "/org/bluez/hci0", "/A_b/c9"] {
            #expect(DBusObjectPath(valid).isValid, "\(valid)")
        }
        for invalid in ["", "a", "/a/", "//", "/a//b", "/a-b", "/é"] {
            #expect(!DBusObjectPath(invalid).isValid, "\(invalid)")
        }
        let device = DBusObjectPath("/org/bluez/hci0/dev_AA")
        #expect(device.parent == "/org/bluez/hci0")
        #expect(DBusObjectPath.root.isAncestor(of: device))
        #expect(DBusObjectPath("/org/bluez").isAncestor(of: device))
        #expect(!DBusObjectPath("/org/blue").isAncestor(of: device))
        #expect(!device.isAncestor(of: device))
        #expect(device.isInNamespace("/org/bluez/hci0/dev_AA"))
        #expect(DBusObjectPath.root.appending("org").appending("bluez") == "/org/bluez")
    }

    /// Each of these would make libdbus abort the process if it reached the marshaller.
    @Test(arguments: [
        ("element of the wrong type", DBusValue.array(elementSignature: "s", [.int32(1)])),
        ("invalid element signature", .array(elementSignature: "ii", [])),
        ("non-basic dictionary key", .dictionary(keySignature: "v", valueSignature: "s", [])),
        ("dictionary value of the wrong type",
         .dictionary(keySignature: "s", valueSignature: "v", [DBusDictionaryEntry(key: .string("a"), value: .bool(true))])),
        ("empty struct", .structure([])),
        ("invalid object path", .objectPath("not/a/path")),
        ("invalid signature value", .signature("a{")),
        ("NUL in a string", .string("a\u{0}b")),
        ("closed descriptor", .unixFD(OwnedFileDescriptor(taking: -1))),
        ("arrays nested 33 deep", (0..<33).reduce(DBusValue.byte(1)) { inner, _ in .array(elementSignature: inner.signature, [inner]) }),
        ("variants nested 65 deep", (0..<65).reduce(DBusValue.byte(1)) { inner, _ in .variant(inner) }),
    ])
    func invalidValuesAreRejectedBeforeMarshalling(_ description: String, _ value: DBusValue) throws {
        #expect(throws: DBusError.self, "\(description)") { try value.validateForWire() }
        let message = try MessageReference.methodCall(destination: nil, path: "/a", interface: nil, member: "M")
        #expect(throws: DBusError.self, "\(description)") { try message.append([value]) }
    }

    @Test func deepButLegalNestingIsAccepted() throws {
        let arrays = (0..<32).reduce(DBusValue.byte(1)) { inner, _ in .array(elementSignature: inner.signature, [inner]) }
        try arrays.validateForWire()
        let variants = (0..<60).reduce(DBusValue.byte(1)) { inner, _ in .variant(inner) }
        try variants.validateForWire()
    }

    @Test func invalidHeaderNamesAreRejected() {
        #expect(throws: DBusError.self) {
            try MessageReference.methodCall(destination: "no dots", path: "/a", interface: nil, member: "M")
        }
        #expect(throws: DBusError.self) {
            try MessageReference.methodCall(destination: nil, path: "/a/", interface: nil, member: "M")
        }
        #expect(throws: DBusError.self) {
            try MessageReference.methodCall(destination: nil, path: "/a", interface: "nodots", member: "M")
        }
        #expect(throws: DBusError.self) {
            try MessageReference.methodCall(destination: nil, path: "/a", interface: nil, member: "a.b")
        }
        #expect(throws: DBusError.self) {
            try MessageReference.signal(path: "/a", interface: "x.y", member: "", destination: nil)
        }
    }

    @Test func errorsMapByName() {
        #expect(DBusError(name: "org.freedesktop.DBus.Error.NoReply", message: "").code == .noReply)
        #expect(DBusError(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "").code == .serviceUnknown)
        #expect(DBusError(name: "org.bluez.Error.InProgress", message: "").code == .other("org.bluez.Error.InProgress"))
        #expect(DBusError.Code.unknownMethod.name == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(DBusError(.disconnected, "one") == DBusError(.disconnected, "another"), "equal by code")
        #expect(DBusError(.failed, "x") != DBusError(.noReply, "x"))
    }

    @Test func matchRuleText() throws {
        let rule = DBusMatchRule(
            sender: "org.bluez", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            pathNamespace: "/org/bluez", arguments: [1: "it's", 0: "org.bluez.Device1"])
        #expect(
            rule.text
                == #"type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path_namespace='/org/bluez',arg0='org.bluez.Device1',arg1='it'\''s'"#
        )
        try rule.validate()
        #expect(throws: DBusError.self) { try DBusMatchRule(path: "/a", pathNamespace: "/a").validate() }
        #expect(throws: DBusError.self) { try DBusMatchRule(arguments: [64: "x"]).validate() }
        #expect(throws: DBusError.self) { try DBusMatchRule(member: "not.valid").validate() }
    }

    @Test func convenienceAccessors() {
        #expect(DBusValue.bytes([1, 2]).bytesValue == [1, 2])
        #expect(DBusValue.strings(["a"]).stringsValue == ["a"])
        let dictionary = DBusValue.variantDictionary(["b": .int16(2), "a": .string("x")])
        #expect(dictionary.variantDictionaryValue == ["a": .string("x"), "b": .int16(2)])
        #expect(dictionary.dictionaryEntries?.first?.key == .string("a"), "keys are sorted for stable output")
        #expect(DBusValue.variant(.variant(.uint32(3))).unwrappingVariants == .uint32(3))
        #expect(DBusValue.int32(1).stringValue == nil)
    }
}
