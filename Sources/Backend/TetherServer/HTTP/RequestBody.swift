import Foundation
import Hummingbird
import NIOCore
import SyncContract

/// Reading a JSON request body within the limits: the media type first, then the declared length (refused
/// before a byte is read), then the bytes actually sent.
enum JSONRequestBody {
    static func read<T: Decodable>(_ type: T.Type, from request: Request, limit: Int) async throws -> T {
        let mediaType = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == SyncAPI.jsonMediaType else {
            throw HTTPProblem(Problem(.unsupportedMediaType, detail: "Content-Type is \(mediaType ?? "missing"); send application/json"))
        }
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            throw tooLarge(limit)
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw tooLarge(limit)
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch {
            throw HTTPProblem(Problem(.malformedRequest, detail: DecodingErrorText.describe(error)))
        }
    }

    static func tooLarge(_ limit: Int) -> HTTPProblem {
        HTTPProblem(Problem(.requestTooLarge, detail: "a request body may hold at most \(limit) bytes", maxBytes: limit))
    }
}
