import Foundation
import Testing
@testable import CaptureKit

/// Reading file names back through a template: what a loop recording takes
/// for one of its files (strictly what the template could have written),
/// and the number and time it reads from the name.
@Suite struct FileNameTemplateMatchingTests {
    static func match(_ pattern: String, _ name: String) throws -> FileNameTemplateMatch? {
        try FileNameTemplate(pattern).match(fileName: name)
    }

    @Test func aNameWithTimeFieldsAndANumberGivesBoth() throws {
        let found = try #require(try Self.match("cam-%Y%m%d-%H%M%S-%n.mp4", "cam-20240102-030405-17.mp4"))
        #expect(found.number == 17)
        #expect(found.timeKey == [2024, 1, 2, 0, 3, 4, 5])
        #expect(found.camera == nil)
    }

    @Test(arguments: [
        "cam-20241302-030405-7.mp4",   // month 13
        "cam-20240132-030405-7.mp4",   // day 32
        "cam-20240102-240405-7.mp4",   // hour 24
        "cam-20240102-036105-7.mp4",   // minute 61
        "cam-20240102-030405-07.mp4",  // %n never pads without a width
        "cam-20240102-030405-0.mp4",   // numbers start at 1
        "cam-20240102-030405-7.mkv",   // another extension
        "cam-20240102-030405-.mp4",    // no number
        "cam-2024012-030405-7.mp4",    // a digit short
        "xcam-20240102-030405-7.mp4",
        "cam-20240102-030405-7.mp4.part",
        "cam-2024-01-02-030405-7.mp4",
        "cam-20240102-030405-7-2.mp4", // -N is only for templates without %n
    ])
    func namesTheTemplateCouldNotHaveWrittenDoNotMatch(name: String) throws {
        #expect(try Self.match("cam-%Y%m%d-%H%M%S-%n.mp4", name) == nil)
    }

    @Test func aWidthPadsTheNumberAndNothingElse() throws {
        #expect(try Self.match("rec-%3n.mp4", "rec-007.mp4")?.number == 7)
        #expect(try Self.match("rec-%3n.mp4", "rec-1234.mp4")?.number == 1234)
        #expect(try Self.match("rec-%3n.mp4", "rec-07.mp4") == nil)
        #expect(try Self.match("rec-%3n.mp4", "rec-0007.mp4") == nil)
        #expect(try Self.match("rec-%3n.mp4", "rec-000.mp4") == nil)
        #expect(try Self.match("rec-%n.mp4", "rec-12.mp4")?.number == 12)
        #expect(try Self.match("rec-%n.mp4", "rec-12a.mp4") == nil)
    }

    /// A template without %n names the files after the first NAME-2.EXT,
    /// NAME-3.EXT … (FileNameTemplate.numbered): those are its too.
    @Test func withoutACounterTheNumberedNamesMatch() throws {
        let pattern = "dash-%Y%m%d-%H%M%S.mp4"
        #expect(try Self.match(pattern, "dash-20240101-120000.mp4")?.number == 1)
        #expect(try Self.match(pattern, "dash-20240101-120000-3.mp4")?.number == 3)
        #expect(try Self.match(pattern, "dash-20240101-120000-1.mp4") == nil)
        #expect(try Self.match(pattern, "dash-20240101-120000-03.mp4") == nil)
        #expect(try Self.match(pattern, "dash-20240101-120000-3.mkv") == nil)
    }

    @Test func cameraNumbersAreRead() throws {
        let found = try #require(try Self.match("angle%c-%3n.mkv", "angle2-014.mkv"))
        #expect(found.camera == 2)
        #expect(found.number == 14)
        #expect(found.timeKey.isEmpty)
    }

    @Test func aFolderPartMustBeTheTemplatesOwnAndHoldNoField() throws {
        let template = try FileNameTemplate("clips/cam-%n.mp4")
        #expect(template.folderPart?.prefix == "clips/")
        #expect(template.folder == "clips/")
        #expect(template.match(fileName: "cam-4.mp4")?.number == 4)
        #expect(try FileNameTemplate("/x-%n.mp4").folderPart?.prefix == "/")
        #expect(try FileNameTemplate("%Y/cam-%n.mp4").folderPart == nil)
        #expect(try FileNameTemplate("%Y/cam-%n.mp4").match(fileName: "cam-1.mp4") == nil)
    }

    /// Every name the template writes reads back as what it was written
    /// from: whatever the fields (composite ones, names, space-padded ones,
    /// the zone, seconds since the epoch).
    @Test(arguments: [
        "a-%F_%T-%n.mp4", "b-%a-%A-%b-%B-%e-%j-%n.mkv", "c-%I%M%S%p-%l-%k-%n.ts", "d-%s-%n.mp4", "e-%Y%m%d%H%M%S%z%Z-%4n.mov",
        "f-%C%y-%G-%g-%V-%u-%w-%U-%W-%R-%n.mp4", "g-%r-%n.mp4", "h-100%%-%n.mp4", "i-%h-%n.mp4",
    ])
    func whatATemplateWritesReadsBack(pattern: String) throws {
        let template = try FileNameTemplate(pattern)
        // Times across a year: morning and evening, one- and two-digit days.
        let base = 1_704_067_200 // 2024-01-01T00:00:00Z
        for (step, number) in zip(0..<40, [1, 2, 9, 10, 99, 100, 12345] + Array(3...35)) {
            let time = base + step * 9 * 86_400 + step * 3_999
            let name = template.path(number: number, time: time)
            let found = try #require(template.match(fileName: name), "\(pattern): \(name) does not read back")
            #expect(found.number == number, "\(name)")
        }
    }

    /// Names read through one template sort by the time they hold, then by number.
    @Test func timeKeysOrderTheNamesByTheirTime() throws {
        let template = try FileNameTemplate("cam-%d.%m.%Y-%I.%M.%S%p-%n.mp4")
        let earlier = try #require(template.match(fileName: "cam-31.12.2023-11.59.59PM-9.mp4"))
        let later = try #require(template.match(fileName: "cam-01.01.2024-12.00.00AM-1.mp4"))
        let noon = try #require(template.match(fileName: "cam-01.01.2024-12.00.00PM-1.mp4"))
        #expect(earlier.timeKey.lexicographicallyPrecedes(later.timeKey))
        #expect(later.timeKey.lexicographicallyPrecedes(noon.timeKey))
        #expect(noon.timeKey == [2024, 1, 1, 0, 12, 0, 0])
    }

    /// A width no file name can hold is refused when the template is made, not
    /// met when a name is written (%87362474055655127c would pad beyond memory).
    @Test func aWidthWiderThanAFileNameIsRefused() throws {
        for pattern in ["x-%256n.mp4", "x-%87362474055655127c.mp4", "x-%99999999999999999999999n.mp4", "x-%\u{0663}n.mp4"] {
            #expect(throws: RecordingError.self, "\(pattern)") { try FileNameTemplate(pattern) }
        }
        #expect(try FileNameTemplate("x-%255n.mp4").path(number: 7).count == 2 + 255 + 4)
        #expect(try FileNameTemplate("x-%003n.mp4").path(number: 7) == "x-007.mp4")
    }
}
