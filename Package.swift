// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "capctl",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "capctl", targets: ["capctl"]),
        .executable(name: "capctl-serve", targets: ["capctl-serve"]),
        .library(name: "CaptureKit", targets: ["CaptureKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        // The HTTP server of `capctl serve` only (in capctl-serve, not in capctl). No traits:
        // their configuration support and full Foundation are not needed, and Foundation
        // would bring ICU.
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1", traits: []),
        // Hummingbird's own dependencies, named for the types capctl-serve uses from them.
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        // HTTPS for capctl-serve (Hummingbird's TLS product builds on it; its HTTP/2 on swift-nio-http2).
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        // SHA-256 of credentials and HMAC of view links, in the service only. Version 4: it
        // builds on FoundationEssentials where 3 imports Foundation, whose ICU tripled
        // capctl-serve (27 to 77 MB).
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
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
        // GStreamer's WebRTC (webrtcbin, with libnice), for capctl-serve's WHEP viewers
        // only: capctl neither links nor loads it.
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-webrtc-1.0",
            providers: [.apt(["libgstreamer-plugins-bad1.0-dev", "libgstreamer-plugins-base1.0-dev", "libnice-dev"])]
        ),
        // The C glue around webrtcbin (its signals and properties are variadic).
        .target(
            name: "CWebRTCPeer",
            dependencies: ["CGStreamer"],
            linkerSettings: ["gstwebrtc-1.0", "gstsdp-1.0", "gstapp-1.0", "gstreamer-1.0", "nice",
                             "gobject-2.0", "glib-2.0"].map { .linkedLibrary($0) }
        ),
        .target(
            name: "CaptureKit",
            dependencies: ["CV4L2", "CALSA", "CFFmpeg", "CFFmpegLoader"]
        ),
        // Every command, its options and what it prints; `capctl` and `capctl-serve` run it.
        .target(
            name: "CapctlCommands",
            dependencies: [
                "CaptureKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "capctl",
            dependencies: ["CapctlCommands"]
        ),
        // The capture side of `capctl serve`: the devices it keeps open, its recordings,
        // photos, live views, events, metrics and files, as typed calls and documents
        // the HTTP layer translates. capctl-serve links it; capctl does not.
        .target(
            name: "CapctlService",
            dependencies: [
                "CapctlCommands",
                "CaptureKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // WebRTC viewers of the service's cameras over GStreamer's webrtcbin (WHEP).
        .target(
            name: "CapctlWebRTC",
            dependencies: ["CWebRTCPeer", "CapctlService", "CaptureKit"]
        ),
        // `capctl serve`'s process: the commands and an HTTP server. A binary of its own,
        // which `capctl serve` runs, so that the server's code and its start-up cost stay
        // out of every other command (linked into capctl, it made `list-devices` start in
        // 6.4 ms rather than 3.7 and use 10.9 MiB rather than 9.8).
        .executableTarget(
            name: "capctl-serve",
            dependencies: [
                "CapctlCommands",
                "CapctlService",
                "CapctlWebRTC",
                "CaptureKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            // The API's OpenAPI document, the source scripts/openapi makes OpenAPIDocument.swift of.
            exclude: ["openapi.json"],
            // The page of GET /, compiled into the binary (PackageResources.index_html): no file to install.
            resources: [.embedInCode("Page/index.html")]
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
        // The service's routes in this process, through Hummingbird's own test client.
        .testTarget(
            name: "CapctlServiceTests",
            dependencies: [
                "capctl",
                "capctl-serve",
                "CapctlService",
                "CapctlCommands",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "capctlTests",
            dependencies: ["capctl", "capctl-serve", "CapctlService", "RecordClip", "LoopRecorder", "WriteFrames", "SaveFrame", "MotionClips"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
