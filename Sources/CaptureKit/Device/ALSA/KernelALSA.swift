import CALSA
import FoundationEssentials

/// The real ALSA interface, through alsa-lib.
struct KernelALSA: ALSAInterface {
    /// Where ALSA's procfs lives: "/proc/asound".
    let procRoot: String

    init(procRoot: String = "/proc/asound") {
        self.procRoot = procRoot
        calsa_silence_library_errors()
    }

    func captureDevices() -> [ALSACaptureDescription] {
        cardIndices().flatMap(captureDevices(onCard:))
    }

    /// The cards present: those alsa-lib finds (it skips cards whose control
    /// device this user may not open) and those procfs lists.
    private func cardIndices() -> [Int32] {
        var cards = Set<Int32>()
        var card: Int32 = -1
        while snd_card_next(&card) == 0, card >= 0 {
            cards.insert(card)
        }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: procRoot)) ?? []
        for entry in entries where entry.hasPrefix("card") {
            if let number = Int32(entry.dropFirst(4)) { cards.insert(number) }
        }
        return cards.sorted()
    }

    private func captureDevices(onCard card: Int32) -> [ALSACaptureDescription] {
        var control: OpaquePointer?
        guard (try? negatedErrnoCall("snd_ctl_open(hw:\(card))") { Int(snd_ctl_open(&control, "hw:\(card)", 0)) }) != nil,
              let control else { return procfsCaptureDevices(onCard: card) }
        defer { snd_ctl_close(control) }

        var cardInfo: OpaquePointer?
        guard snd_ctl_card_info_malloc(&cardInfo) == 0, let cardInfo else { return [] }
        defer { snd_ctl_card_info_free(cardInfo) }
        guard (try? negatedErrnoCall("snd_ctl_card_info") { Int(snd_ctl_card_info(control, cardInfo)) }) != nil else { return [] }
        let cardID = String(cString: snd_ctl_card_info_get_id(cardInfo))
        let cardName = String(cString: snd_ctl_card_info_get_name(cardInfo))
        let driver = String(cString: snd_ctl_card_info_get_driver(cardInfo))

        var pcmInfo: OpaquePointer?
        guard snd_pcm_info_malloc(&pcmInfo) == 0, let pcmInfo else { return [] }
        defer { snd_pcm_info_free(pcmInfo) }

        var found: [ALSACaptureDescription] = []
        var device: Int32 = -1
        while (try? negatedErrnoCall("snd_ctl_pcm_next_device") { Int(snd_ctl_pcm_next_device(control, &device)) }) != nil, device >= 0 {
            snd_pcm_info_set_device(pcmInfo, UInt32(device))
            snd_pcm_info_set_subdevice(pcmInfo, 0)
            snd_pcm_info_set_stream(pcmInfo, SND_PCM_STREAM_CAPTURE)
            // Fails (ENOENT) for devices without a capture stream.
            guard (try? negatedErrnoCall("snd_ctl_pcm_info") { Int(snd_ctl_pcm_info(control, pcmInfo)) }) != nil else { continue }
            found.append(ALSACaptureDescription(
                cardIndex: card, cardID: cardID, cardName: cardName, driver: driver, device: device,
                pcmName: String(cString: snd_pcm_info_get_name(pcmInfo)),
                subdevices: snd_pcm_info_get_subdevices_count(pcmInfo)))
        }
        return found
    }

    /// The card's capture PCMs from procfs, for a control device this user may not open.
    private func procfsCaptureDevices(onCard card: Int32) -> [ALSACaptureDescription] {
        guard let cardID = try? String(contentsOfFile: "\(procRoot)/card\(card)/id", encoding: .utf8),
              let pcmList = try? String(contentsOfFile: "\(procRoot)/pcm", encoding: .utf8) else { return [] }
        let cardList = (try? String(contentsOfFile: "\(procRoot)/cards", encoding: .utf8)) ?? ""
        return ALSAProcfs.captureDevices(card: card, cardID: cardID.trimmingWhitespace(),
                                         pcmList: pcmList, cardList: cardList)
    }

    func cardExists(_ card: String) -> Bool {
        snd_card_get_index(card) >= 0
    }

    func openCapture(_ name: String) throws(SystemCallError) -> any ALSACapturePCM {
        try KernelALSACapturePCM(name: name)
    }

    func captureFormats(_ name: String) throws(SystemCallError) -> [AudioFormat] {
        var handle: OpaquePointer?
        // calsa_PCM_NONBLOCK: probing must never wait for a device another process holds.
        try negatedErrnoCall("snd_pcm_open(\(name))") { Int(snd_pcm_open(&handle, name, SND_PCM_STREAM_CAPTURE, calsa_PCM_NONBLOCK)) }
        guard let pcm = handle else { throw SystemCallError(call: "snd_pcm_open(\(name))", errno: ENOMEM) }
        defer { snd_pcm_close(pcm) }

        var all: OpaquePointer?
        var one: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&all) == 0, let all else { throw SystemCallError(call: "snd_pcm_hw_params_malloc", errno: ENOMEM) }
        defer { snd_pcm_hw_params_free(all) }
        guard snd_pcm_hw_params_malloc(&one) == 0, let one else { throw SystemCallError(call: "snd_pcm_hw_params_malloc", errno: ENOMEM) }
        defer { snd_pcm_hw_params_free(one) }

        try negatedErrnoCall("snd_pcm_hw_params_any(\(name))") { Int(snd_pcm_hw_params_any(pcm, all)) }

        var formats: [AudioFormat] = []
        for raw in 0...SND_PCM_FORMAT_LAST.rawValue {
            let format = snd_pcm_format_t(rawValue: raw)
            guard snd_pcm_hw_params_test_format(pcm, all, format) == 0 else { continue }
            snd_pcm_hw_params_copy(one, all)
            guard snd_pcm_hw_params_set_format(pcm, one, format) == 0 else { continue }
            var direction: Int32 = 0
            var minRate: UInt32 = 0, maxRate: UInt32 = 0, minChannels: UInt32 = 0, maxChannels: UInt32 = 0
            snd_pcm_hw_params_get_rate_min(one, &minRate, &direction)
            snd_pcm_hw_params_get_rate_max(one, &maxRate, &direction)
            snd_pcm_hw_params_get_channels_min(one, &minChannels)
            snd_pcm_hw_params_get_channels_max(one, &maxChannels)
            let rates = AudioFormat.commonRates.filter { snd_pcm_hw_params_test_rate(pcm, one, $0, 0) == 0 }
            formats.append(AudioFormat(
                sampleFormat: String(cString: snd_pcm_format_name(format)),
                rateRange: minRate...max(minRate, maxRate), standardRates: rates,
                channelRange: minChannels...max(minChannels, maxChannels)))
        }
        return formats
    }
}
