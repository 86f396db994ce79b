import ArgumentParser
import CaptureKit

/// `record`'s time-lapse: a frame every interval of capture time, played
/// at its own frame rate (`--fps` stays the camera's capture rate).
struct TimeLapseOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Record a time-lapse: one frame every INTERVAL of capture time (the frame nearest each tick), played at --timelapse-fps.", valueName: "interval"))
    var timelapse: DurationArgument?

    @Option(name: .long, help: ArgumentHelp("The frame rate a time-lapse plays at (default 30); --fps is the camera's capture rate.", valueName: "rate"))
    var timelapseFps: RateArgument?

    /// The playback rate when none is given.
    static let defaultFramesPerSecond = 30.0

    /// What a time-lapse cannot go with, by what the command line asks for.
    func validate(out: String?, audio: Bool, streams: Bool, copiesVideo: Bool, preRoll: Bool, motion: Bool) throws {
        guard timelapse != nil else {
            if timelapseFps != nil {
                throw ValidationError("--timelapse-fps is the rate a time-lapse plays at; add --timelapse INTERVAL, such as --timelapse 10s (--fps sets the camera's rate)")
            }
            return
        }
        if audio {
            throw ValidationError("a time-lapse has no sound (its frames are seconds or minutes apart); leave out --audio")
        }
        if streams {
            throw ValidationError("a time-lapse is written to a file, and a stream plays live; leave out --stream")
        }
        if copiesVideo {
            throw ValidationError("a time-lapse keeps some of the camera's frames and times them anew, so it is encoded; leave out --video-codec copy")
        }
        if preRoll || motion {
            throw ValidationError("a time-lapse keeps one frame an interval, which --pre-roll and --resume-on cannot follow; leave them out")
        }
        if let out, FileType(path: out)?.availableMediaTypes.contains(.video) == false {
            throw ValidationError("a time-lapse is a movie; record to .mp4, .mov, .mkv, .webm or .ts")
        }
    }

    /// The time-lapse asked for, if any.
    var setting: TimeLapse? {
        timelapse.map { TimeLapse(interval: $0.time, framesPerSecond: timelapseFps?.value ?? Self.defaultFramesPerSecond) }
    }
}
