extension CapturePhotoSeries {
    /// What a series of photos asks for: one photo, a burst of consecutive
    /// frames, or a time-lapse of one photo every `interval`. Each photo of the
    /// series is one `PhotoSettings` request to a `PhotoOutput` (as
    /// AVCapturePhotoOutput takes one settings object per photo);
    /// `CapturePhotoSeries` makes those requests, names their files and spaces them.
    ///
    /// The command line and the service both fill this in, and `validate()`
    /// checks it for both: its errors name the setting (`Settings.Setting`),
    /// which each interface calls by its own name (`--count`, `count`).
    public struct Settings: Sendable, Hashable {
        /// The settings, by the name this type gives them; an interface names
        /// them its own way when it reports a `SettingsError`.
        public enum Setting: String, Sendable, Hashable, CaseIterable {
            case destination, format, quality, count, interval, flashMode, livePhotoMovieFileType
        }

        /// Where the photos go: a file name template (`%n` the photo's number,
        /// `%3n` padded; strftime fields the time of the photo; `%c` the camera's
        /// number, 1). Without `%n`, a series writes OUT, OUT-2, OUT-3 … nil: the
        /// photos are made in memory only (`CapturedPhoto.fileDataRepresentation`).
        public var destination: String?
        /// The file format; nil: the destination's extension decides (JPEG without a destination).
        public var format: PhotoFileFormat?
        /// JPEG quality 1 to 100; nil: a camera's MJPEG frame as it came, else a high default.
        public var quality: Int?
        /// How many photos.
        public var count = 1
        /// Time between photos, from the first photo's capture time; zero: consecutive frames.
        public var interval = MediaTime.zero
        /// Whether the flash lights each photo.
        public var flashMode = PhotoFlashMode.off
        /// With a destination: also a live photo movie beside each photo, in this
        /// container (`.quickTimeMovie` or `.mp4`); the output needs
        /// `isLivePhotoCaptureEnabled`.
        public var livePhotoMovieFileType: FileType?
        /// After a photo fails, ask for no further one (the series then ends with
        /// the photos asked for before it); otherwise the series goes on.
        public var stopsAfterFailure = false
        /// The most photos a series may take.
        public var maximumCount = 100_000
        /// The longest a time-lapse may last (`count − 1` intervals); nil: no limit.
        public var maximumDuration: MediaTime?

        public init(destination: String? = nil) {
            self.destination = destination
        }

        /// The format the photos are written in: `format`, else the one the
        /// destination's extension implies, else JPEG (photos made in memory).
        public var resolvedFormat: PhotoFileFormat? {
            if let format { return format }
            guard let destination else { return .jpeg }
            return PhotoFileFormat(path: destination)
        }

        /// Checks the settings against each other, in the order a person reads them.
        public func validate() throws(SettingsError) {
            if let destination {
                do { _ = try FileNameTemplate(destination) } catch {
                    throw SettingsError(.destination, .badTemplate(destination, error.description))
                }
            }
            guard let format = resolvedFormat else {
                throw SettingsError(.format, .formatUnknown(destination ?? ""))
            }
            guard (1...maximumCount).contains(count) else {
                throw SettingsError(.count, .countOutOfRange(count, maximum: maximumCount))
            }
            if let quality {
                guard (1...100).contains(quality) else { throw SettingsError(.quality, .qualityOutOfRange(quality)) }
                guard format == .jpeg else { throw SettingsError(.quality, .qualityNeedsJPEG(format)) }
            }
            if interval < .zero { throw SettingsError(.interval, .intervalNegative) }
            if interval > .zero {
                guard count >= 2 else { throw SettingsError(.interval, .intervalNeedsSeveralPhotos) }
                if let maximumDuration, interval.seconds * Double(count - 1) > maximumDuration.seconds {
                    throw SettingsError(.count, .seriesTooLong(count: count, interval: interval, maximum: maximumDuration))
                }
            }
            if count > 1 && destination == nil {
                throw SettingsError(.destination, .severalPhotosNeedDestination(count))
            }
            if let type = livePhotoMovieFileType {
                guard type == .quickTimeMovie || type == .mp4 else { throw SettingsError(.livePhotoMovieFileType, .livePhotoMovieFileType(type)) }
                guard destination != nil else { throw SettingsError(.livePhotoMovieFileType, .livePhotoMovieNeedsDestination) }
            }
        }
    }

    /// Settings of a photo series that do not go together: which setting, and
    /// what is wrong with it. `message(naming:)` says it with the names an
    /// interface gives the settings; `description` with `Setting`'s own.
    public struct SettingsError: Error, Sendable, Hashable, CustomStringConvertible {
        public enum Problem: Sendable, Hashable {
            /// The destination is not a file name template (the template's own reason).
            case badTemplate(String, String)
            /// No format was given, and the destination's extension implies none.
            case formatUnknown(String)
            case countOutOfRange(Int, maximum: Int)
            case qualityOutOfRange(Int)
            /// A quality was given for a format that has none.
            case qualityNeedsJPEG(PhotoFileFormat)
            case intervalNegative
            /// An interval with one photo.
            case intervalNeedsSeveralPhotos
            /// `count − 1` intervals last longer than the series may.
            case seriesTooLong(count: Int, interval: MediaTime, maximum: MediaTime)
            /// More than one photo, and nowhere to write them.
            case severalPhotosNeedDestination(Int)
            case livePhotoMovieFileType(FileType)
            case livePhotoMovieNeedsDestination
            /// Two photos of the series would be written to this file.
            case writtenTwice(String)
        }

        public let setting: Settings.Setting
        public let problem: Problem

        public init(_ setting: Settings.Setting, _ problem: Problem) {
            self.setting = setting
            self.problem = problem
        }

        /// One line, with each setting called what `name` calls it (`--count` on
        /// a command line, `count` in JSON).
        public func message(naming name: (Settings.Setting) -> String) -> String {
            switch problem {
            case .badTemplate(let destination, let reason):
                return "\(name(.destination)) '\(destination)': \(reason)"
            case .formatUnknown(let destination):
                return "cannot tell the photo format from '\(destination)'; end it in .jpg, .png or .raw, or give \(name(.format))"
            case .countOutOfRange(let count, let maximum):
                return "\(name(.count)) \(count) is out of range; use 1 to \(maximum) photos"
            case .qualityOutOfRange(let quality):
                return "\(name(.quality)) \(quality) is out of range; use 1 to 100"
            case .qualityNeedsJPEG(let format):
                return "\(name(.quality)) applies to JPEG photos, not \(format.rawValue)"
            case .intervalNegative:
                return "\(name(.interval)) must be 0 or a positive time, such as 2s or 500ms"
            case .intervalNeedsSeveralPhotos:
                return "\(name(.interval)) needs \(name(.count)) 2 or more"
            case .seriesTooLong(let count, let interval, let maximum):
                return "\(name(.count)) \(count) at \(name(.interval)) \(interval.seconds) s takes longer than \(Int(maximum.seconds)) s; take fewer photos, or ask for each photo on its own"
            case .severalPhotosNeedDestination(let count):
                return "\(count) photos need \(name(.destination)), a name template such as 'shot-%3n.jpg'"
            case .livePhotoMovieFileType(let type):
                return "\(name(.livePhotoMovieFileType)) \(type.rawValue) is not a live photo movie's container; use mov or mp4"
            case .livePhotoMovieNeedsDestination:
                return "\(name(.livePhotoMovieFileType)) needs \(name(.destination)): the movie is written beside the photo"
            case .writtenTwice(let file):
                return "\(name(.destination)) would write \(file) twice; add %n to it, such as 'shot-%3n.jpg'"
            }
        }

        public var description: String { message { $0.rawValue } }
    }
}
