import CapctlCommands
import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

extension CaptureService {
    /// `GET /files`: every file in the folder, each with whether a running recording writes it.
    package func fileList() -> FileListDocument {
        let writing = Set(filesBeingWritten())
        let files = folder.entries().map { FileDocument(name: $0.name, bytes: $0.bytes, modified: $0.modified, recording: writing.contains($0.name)) }
        return FileListDocument(files: files)
    }

    /// A file of the folder, by name: its path and size.
    package func file(named name: String) throws(ServiceError) -> (path: String, bytes: Int64) {
        try folder.existingFile(name)
    }

    /// Deletes a finished file of the folder; one a recording writes is refused.
    package func deleteFile(named name: String) throws(ServiceError) -> DeletedFileDocument {
        let file = try folder.existingFile(name)
        if filesBeingWritten().contains(name) {
            throw ServiceError(.conflict, "\(name) is being recorded; stop its recording first")
        }
        do throws(SystemCallError) {
            try Posix.unlink(file.path)
        } catch {
            throw ServiceError(.failed, "cannot delete \(name): \(error.reason)")
        }
        return DeletedFileDocument(deleted: name, bytes: file.bytes)
    }
}
