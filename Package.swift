// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "capctl",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "capctl", targets: ["capctl"]),
        .library(name: "CaptureKit", targets: ["CaptureKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CV4L2",
            pkgConfig: "libv4l2",
            providers: [.apt(["libv4l-dev"])]
        ),
        .systemLibrary(
            name: "CALSA",
            pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]
        ),
        // FFmpeg's headers only (libavformat-dev, libavcodec-dev, libavutil-dev,
        // libswscale-dev, libswresample-dev; on Debian they sit on the default
        // include path). Its libraries are not linked: CFFmpegLoader loads them
        // when the first FFmpeg function is called, so that commands which
        // read or write no media file start without them.
        .systemLibrary(name: "CFFmpeg"),
        .target(name: "CFFmpegLoader"),
        .target(
            name: "CaptureKit",
            dependencies: ["CV4L2", "CALSA", "CFFmpeg", "CFFmpegLoader"]
        ),
        .executableTarget(
            name: "capctl",
            dependencies: [
                "CaptureKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "RecordClip",
            dependencies: ["CaptureKit"],
            path: "Examples/RecordClip"
        ),
        .executableTarget(
            name: "LoopRecorder",
            dependencies: ["CaptureKit"],
            path: "Examples/LoopRecorder"
        ),
        .executableTarget(
            name: "WriteFrames",
            dependencies: ["CaptureKit"],
            path: "Examples/WriteFrames"
        ),
        .executableTarget(
            name: "SaveFrame",
            dependencies: ["CaptureKit"],
            path: "Examples/SaveFrame"
        ),
        .executableTarget(
            name: "MotionClips",
            dependencies: ["CaptureKit"],
            path: "Examples/MotionClips"
        ),
        .executableTarget(
            name: "capctl-bench",
            dependencies: ["CaptureKit", "CFFmpeg"]
        ),
        .testTarget(
            name: "CaptureKitTests",
            dependencies: ["CaptureKit"]
        ),
        .testTarget(
            name: "capctlTests",
            dependencies: ["capctl", "RecordClip", "LoopRecorder", "WriteFrames", "SaveFrame", "MotionClips"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
