import Foundation

/// The checks a secrets file must pass before tetherd reads it: it exists, it is a regular file, and only its
/// owner may read or write it (mode 0600 or stricter). A token that others can read is refused rather than used:
/// the preamble's rule "secrets files 0600".
public enum SecretFileCheck {
    /// Nil when the file is fine, else what is wrong and how to fix it. `holding` names the secret in the message.
    public static func problem(at path: String, holding secret: String = "token") -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else {
            return "cannot use \(path): \(String(cString: strerror(errno)))"
        }
        guard status.st_mode & S_IFMT == S_IFREG else { return "\(path) is not a regular file" }
        let permissions = status.st_mode & 0o777
        guard permissions & 0o077 == 0 else {
            return "\(path) has mode \(String(permissions, radix: 8)); a \(secret) file must be readable by its owner only: chmod 600 \(path)"
        }
        return nil
    }
}

extension ConfigurationReader {
    /// The checks that look at the file system: the sync token file's permissions when sync is configured, and the
    /// consent codes file's permissions and lines when one is configured. `--check-config` runs them too, so a
    /// wrong mode shows up before the service starts.
    public static func fileProblems(in configuration: DaemonConfiguration, document: String, path: String) -> [ConfigurationProblem] {
        let lines = TOMLKeyLines(document: document)
        var problems: [ConfigurationProblem] = []
        if let consentCodesFile = configuration.health.consentCodesFile {
            do {
                _ = try ConsentCodes.load(path: consentCodesFile)
            } catch {
                problems.append(ConfigurationProblem(
                    key: "health.consent_codes_file", line: lines.line(of: "health.consent_codes_file"), message: error.description))
            }
        }
        guard configuration.sync.serverURL != nil else { return problems }
        if let message = SecretFileCheck.problem(at: configuration.sync.tokenFile) {
            problems.append(ConfigurationProblem(key: "sync.token_file", line: lines.line(of: "sync.token_file"), message: message))
        }
        if let caFile = configuration.sync.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            problems.append(ConfigurationProblem(key: "sync.ca_file", line: lines.line(of: "sync.ca_file"), message: "cannot read \(caFile)"))
        }
        return problems
    }
}
