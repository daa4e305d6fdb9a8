import MCUbootImage

/// Test-only edits of imgtool's images, each changing one thing a hostile or broken file could change.
enum ImageEditing {
    static func flip(_ image: [UInt8], at offset: Int, mask: UInt8 = 0x01) -> [UInt8] {
        var copy = image
        copy[offset] ^= mask
        return copy
    }

    static func setUInt16(_ image: [UInt8], at offset: Int, _ value: UInt16) -> [UInt8] {
        var copy = image
        copy[offset] = UInt8(truncatingIfNeeded: value)
        copy[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
        return copy
    }

    static func setUInt32(_ image: [UInt8], at offset: Int, _ value: UInt32) -> [UInt8] {
        var copy = image
        for index in 0..<4 { copy[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
        return copy
    }

    static func readUInt16(_ image: [UInt8], at offset: Int) -> UInt16 {
        UInt16(image[offset]) | UInt16(image[offset + 1]) << 8
    }

    /// The image with its unprotected TLV area rewritten from `transform`'s records (type, value), in order, and
    /// the info header's total set to match. Everything before the area is kept as it was.
    static func rewritingUnprotectedTLVs(
        _ image: [UInt8], _ transform: ([(type: UInt16, value: [UInt8])]) -> [(type: UInt16, value: [UInt8])]
    ) throws -> [UInt8] {
        let parsed = try ParsedImage(image)
        let records = transform(parsed.unprotectedTLVs.map { ($0.type.rawValue, Array($0.value)) })
        var area: [UInt8] = []
        for record in records {
            area += [UInt8(truncatingIfNeeded: record.type), UInt8(record.type >> 8)]
            area += [UInt8(truncatingIfNeeded: record.value.count), UInt8(truncatingIfNeeded: record.value.count >> 8)]
            area += record.value
        }
        let total = area.count + 4
        return Array(image[..<parsed.unprotectedAreaRange.lowerBound]) + [0x07, 0x69, UInt8(truncatingIfNeeded: total), UInt8(truncatingIfNeeded: total >> 8)]
            + area
    }
}
