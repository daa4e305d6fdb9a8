/// `GET /v1/devices/{serial}/settings` and the `PUT` response: a device's settings on the server. The ETag is
/// the strong validator `"<version>"` (`EntityTag`).
public struct DeviceSettingsResource: Codable, Hashable, Sendable {
    public var serial: String
    /// The server's settings version: 0 before any desired settings exist, then +1 per change of `desired`.
    public var version: Int64
    public var desired: SettingsDocument?
    public var changedBy: SettingsChangeAuthor?
    /// The latest settings a gateway reported from the device, and the device's config version (§7.11).
    public var reported: SettingsDocument?
    public var reportedVersion: Int64?
    /// Disagreements the gateway's three-way merge is holding for a technician.
    public var conflicts: [SettingConflictPayload]

    public init(
        serial: String, version: Int64, desired: SettingsDocument? = nil, changedBy: SettingsChangeAuthor? = nil, reported: SettingsDocument? = nil,
        reportedVersion: Int64? = nil, conflicts: [SettingConflictPayload] = []
    ) {
        self.serial = serial
        self.version = version
        self.desired = desired
        self.changedBy = changedBy
        self.reported = reported
        self.reportedVersion = reportedVersion
        self.conflicts = conflicts
    }

    enum CodingKeys: String, CodingKey {
        case serial
        case version
        case desired
        case changedBy = "changed_by"
        case reported
        case reportedVersion = "reported_version"
        case conflicts
    }
}

/// `PUT /v1/devices/{serial}/settings` body: the desired settings, replacing the server's (not overlaid).
public struct DesiredSettingsUpdate: Codable, Hashable, Sendable {
    public var desired: SettingsDocument

    public init(desired: SettingsDocument) { self.desired = desired }
}

/// Strong entity tags for settings versions (RFC 9110 §8.8.3): `"<version>"`.
public enum EntityTag {
    public static func make(version: Int64) -> String { "\"\(version)\"" }

    /// The versions an If-None-Match or If-Match field names; `nil` for `*`. Weak tags (`W/"…"`) compare by
    /// their opaque value, as If-None-Match's weak comparison allows. Tags this server never issues are skipped.
    public static func versions(in field: String) -> [Int64]? {
        if trimmed(field) == "*" { return nil }
        return field.split(separator: ",").compactMap { part -> Int64? in
            var tag = trimmed(part)
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            guard tag.count >= 2, tag.first == "\"", tag.last == "\"" else { return nil }
            return Int64(tag.dropFirst().dropLast())
        }
    }

    /// Without optional whitespace (RFC 9110 §5.6.3: SP and HTAB).
    private static func trimmed(_ text: some StringProtocol) -> Substring {
        var slice = Substring(text)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
