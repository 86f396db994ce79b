@testable import CaptureKit
import Testing

/// Capture PCMs read from /proc/asound texts, for cards whose control device is closed to the user.
struct ALSAProcfsTests {
    let pcmList = """
        00-00: Loopback PCM : Loopback PCM : playback 8 : capture 8
        00-01: Loopback PCM : Loopback PCM : playback 8 : capture 8
        01-00: Dummy PCM : Dummy PCM : playback 8 : capture 8
        02-03: HDMI 0 : HDMI 0 : playback 1
        """
    let cardList = """
         0 [Loopback       ]: Loopback - Loopback
                              Loopback 1
         1 [Dummy          ]: Dummy - Dummy 1
                              Dummy 1
         2 [HDMI           ]: HDA-Intel - HDA ATI HDMI
        """

    @Test func listsTheCaptureDevicesOfOneCard() {
        let loopback = ALSAProcfs.captureDevices(card: 0, cardID: "Loopback", pcmList: pcmList, cardList: cardList)
        #expect(loopback == [
            ALSACaptureDescription(cardIndex: 0, cardID: "Loopback", cardName: "Loopback", driver: "Loopback", device: 0, pcmName: "Loopback PCM", subdevices: 8),
            ALSACaptureDescription(cardIndex: 0, cardID: "Loopback", cardName: "Loopback", driver: "Loopback", device: 1, pcmName: "Loopback PCM", subdevices: 8),
        ])
        let dummy = ALSAProcfs.captureDevices(card: 1, cardID: "Dummy", pcmList: pcmList, cardList: cardList)
        #expect(dummy.map(\.cardName) == ["Dummy 1"])
    }

    @Test func playbackOnlyDevicesAreNotListed() {
        #expect(ALSAProcfs.captureDevices(card: 2, cardID: "HDMI", pcmList: pcmList, cardList: cardList).isEmpty)
    }

    @Test func cardNameAndDriverFromTheCardsFile() {
        #expect(ALSAProcfs.cardNameAndDriver(card: 2, cardList: cardList)! == ("HDA ATI HDMI", "HDA-Intel"))
        #expect(ALSAProcfs.cardNameAndDriver(card: 7, cardList: cardList) == nil)
    }
}
