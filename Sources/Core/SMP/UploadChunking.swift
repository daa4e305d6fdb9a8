import CBOR

/// How much image data fits one upload request: the whole encoded request (header, CBOR map, data) must fit the
/// device's receive buffer `buf_size` (Zephyr "SMP OS management group", "MCUmgr Parameters"), and, where the device
/// does not reassemble requests, one write.
public enum UploadChunking {
    /// The first chunk carries at least the 32-byte MCUboot image header: Zephyr checks its magic before anything
    /// else (zephyr_img_mgmt.c, img_mgmt_upload_inspect; IMG_MGMT_ERR_INVALID_IMAGE_HEADER otherwise).
    public static let firstChunkMinimum = 32

    /// The largest data length for a chunk at `offset` (with the first chunk's fields when `first` is given) whose
    /// encoded request is at most `budget` bytes; at most `remaining`. Nil when not even one byte fits.
    public static func dataLength(
        offset: Int, remaining: Int, first: SMPUploadChunk.FirstChunkFields?, budget: Int
    ) -> Int? {
        // The request with no data; its `data` head is one byte (length 0). CBOR sizes only grow with the length's
        // head (RFC 8949 §3: 1, 2, 3, 5 or 9 bytes), so the size for n bytes is empty − 1 + head(n) + n.
        let empty = SMPRequest.imageUpload(SMPUploadChunk(offset: offset, data: [], first: first)).encodedSize
        func size(_ count: Int) -> Int { empty - 1 + CBORHead.size(argument: UInt64(count)) + count }
        var count = min(remaining, budget - empty + 1)
        while count > 0, size(count) > budget { count -= 1 }
        return count > 0 ? count : (remaining == 0 && empty <= budget ? 0 : nil)
    }
}
