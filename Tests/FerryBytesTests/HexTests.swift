import Testing
import FerryBytes

@Suite struct HexTests {
    @Test func twoLowercaseDigitsABytes() {
        #expect(Hex.lowercase([0x0f, 0xa0, 0x00, 0xff]) == "0fa000ff")
        #expect(Hex.lowercase([]) == "")
    }
}
