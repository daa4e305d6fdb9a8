import Testing
import TetherServer
import TetherStore

/// The server accepts exactly the words the gateway stores (`HealthUploadValidation` repeats them because the server
/// does not link the gateway's store): a new time basis, lane, status or reason on the gateway fails here until the
/// server learns it.
@Suite("health upload: the server's vocabulary is the gateway's")
struct HealthVocabularyTests {
    @Test("time bases, lanes, value statuses, deletion reasons and requesters")
    func sameWords() {
        #expect(HealthUploadValidation.timeBases == Set(HealthTimeBasis.allCases.map(\.rawValue)))
        #expect(HealthUploadValidation.lanes == Set(HealthLane.allCases.map(\.rawValue)))
        #expect(HealthUploadValidation.valueStatuses == Set(HealthValueStatus.allCases.map(\.rawValue)))
        #expect(HealthUploadValidation.deletionReasons == Set(HealthDeletionReason.allCases.map(\.rawValue)))
        // The gateway's requesters: the two authors of a change, and the gateway itself (healthDeletion CHECK).
        #expect(HealthUploadValidation.requesters == Set(HealthChangeAuthor.allCases.map(\.rawValue) + ["gateway"]))
    }
}
