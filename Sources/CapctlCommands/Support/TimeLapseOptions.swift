import ArgumentParser
import CaptureKit

/// `record`'s time-lapse: a frame every interval of capture time, played
/// at its own frame rate (`--fps` stays the camera's capture rate).
struct TimeLapseOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Record a time-lapse: one frame every INTERVAL of capture time (the frame nearest each tick), played at --timelapse-fps.", valueName: "interval"))
    var timelapse: DurationArgument?

    @Option(name: .long, help: ArgumentHelp("The frame rate a time-lapse plays at (default 30); --fps is the camera's capture rate.", valueName: "rate"))
    var timelapseFps: RateArgument?
}
