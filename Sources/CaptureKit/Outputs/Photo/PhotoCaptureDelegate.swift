/// What a photo output tells about each request, like
/// AVCapturePhotoCaptureDelegate. For every request the output calls, in
/// this order and exactly once each: `willBeginCapture`, `willCapturePhoto`,
/// `didCapturePhoto`, then `didFinishCapture` (with an error when the request
/// failed). Between the last two come the results: `didFinishProcessingPhoto`
/// once for each photo produced (zero times when the request failed), and for
/// a live photo `didFinishProcessingLivePhotoMovie`. Every call carries the
/// request's resolved settings, whose `uniqueID` is that of the
/// `PhotoSettings` it was made with. Calls come on the output's processing
/// thread, one at a time (AVFoundation calls on its own queue); a request
/// the output cannot take (the session stopped, too many waiting) is
/// answered on the thread that called `capturePhoto`, before it returns.
/// Each call has an empty default. As in AVFoundation, the protocol does not
/// require `Sendable`.
public protocol PhotoCaptureDelegate: AnyObject {
    /// The request was accepted and its settings resolved (size, format, whether the flash fires).
    func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings)
    /// The flash (if any) has fired: the next frame the camera delivers is the photo.
    func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings)
    /// The frame was taken, captured at `timestamp` (CLOCK_MONOTONIC).
    func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings, timestamp: MediaTime)
    /// A photo is ready (and written, when the settings name a file).
    func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto)
    /// The live photo movie is written: `photoDisplayTime` is the photo's time in it.
    func photoOutput(_ output: PhotoOutput, didFinishProcessingLivePhotoMovie movie: LivePhotoMovie)
    /// The request is over; `error` says why it failed.
    func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings, error: PhotoError?)
}

extension PhotoCaptureDelegate {
    public func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings) {}
    public func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings) {}
    public func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings, timestamp: MediaTime) {}
    public func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto) {}
    public func photoOutput(_ output: PhotoOutput, didFinishProcessingLivePhotoMovie movie: LivePhotoMovie) {}
    public func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings, error: PhotoError?) {}
}

/// The movie of a live photo.
public struct LivePhotoMovie: Sendable, Hashable {
    public let resolvedSettings: ResolvedPhotoSettings
    public let path: String
    /// Media time the movie plays.
    public let duration: MediaTime
    /// Where in the movie the photo's frame is (from the movie's start).
    public let photoDisplayTime: MediaTime
    public let frames: Int
    public let bytes: Int64
}

/// Lights a photo: fired just before the frame is taken, put out after.
/// `TorchPhotoFlash` drives a camera's V4L2 flash or torch; tests use fakes.
public protocol PhotoFlashDevice: AnyObject {
    /// Lights the scene for the next frame.
    func fire() throws(PhotoError)
    /// Turns off what `fire()` turned on (a strobe goes out by itself).
    func extinguish()
}

/// A camera's light as a photo flash: the V4L2 flash strobe when there is
/// one, else the torch on at full available level for the frame.
package final class TorchPhotoFlash: PhotoFlashDevice {
    package let torch: Torch
    private var torchOn = false

    /// Fails when the light can neither strobe nor stay on.
    package init(torch: Torch) throws(PhotoError) {
        guard torch.hasFlash || torch.hasTorch else { throw .flash("\(torch.source): the light can neither flash nor stay on") }
        self.torch = torch
    }

    package func fire() throws(PhotoError) {
        do {
            if torch.hasFlash {
                try torch.strobeFlash()
            } else {
                try torch.setTorchModeOn(level: .maximumAvailable)
                torchOn = true
            }
        } catch {
            throw .flash("cannot fire the flash: \(error.description)")
        }
    }

    package func extinguish() {
        guard torchOn else { return }
        torchOn = false
        try? torch.setTorchMode(.off)
    }
}
