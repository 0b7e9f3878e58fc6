import FeatureFlags

/// Reading a `--schema FILE` option, shared by `lint` and `eval`.
enum SchemaFile {
    /// The schema in `file`, or the exit status after explaining on stderr why it cannot be
    /// used: 66 when the file cannot be read, 65 when it is not a valid schema.
    static func load(_ file: String, command: String, console: Console) -> Result<FlagSchema, ExitStatus> {
        let bytes: [UInt8]
        do {
            bytes = try FileIO.read(file)
        } catch {
            console.err("flagctl \(command): cannot read the schema \(file): \(error)")
            return .failure(ExitStatus(code: 66))
        }
        do {
            return .success(try FlagSchema(json: bytes))
        } catch {
            console.err("flagctl \(command): the schema \(file) is unusable: \(error.message)")
            return .failure(ExitStatus(code: 65))
        }
    }

    /// A process exit status, as an error.
    struct ExitStatus: Error {
        let code: Int32
    }
}
