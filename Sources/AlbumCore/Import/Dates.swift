import Glibc

/// Calendar arithmetic for capture dates, without Foundation's calendars (which are
/// slow and allocate): civil dates to Unix seconds and back.
public enum Dates {
    /// A wall-clock date and time as a camera writes it.
    public struct WallClock: Equatable, Sendable {
        public var year, month, day, hour, minute, second: Int

        public var dayNumber: Int { year * 10000 + month * 100 + day }

        var isPlausible: Bool {
            (1800...2999).contains(year) && (1...12).contains(month) && (1...31).contains(day)
                && (0...23).contains(hour) && (0...59).contains(minute) && (0...60).contains(second)
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civilFromDays(_ z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// Unix seconds of a wall clock read as UTC.
    public static func unixSeconds(utc wall: WallClock) -> Int64 {
        Int64(daysFromCivil(wall.year, wall.month, wall.day)) * 86400
            + Int64(wall.hour * 3600 + wall.minute * 60 + wall.second)
    }

    /// The wall clock at `instant` on a clock `offsetMinutes` east of UTC.
    public static func wallClock(_ instant: Int64, offsetMinutes: Int) -> WallClock {
        let local = instant + Int64(offsetMinutes) * 60
        var days = local / 86400
        var rest = local % 86400
        if rest < 0 { rest += 86400; days -= 1 }
        let (y, m, d) = civilFromDays(Int(days))
        return WallClock(year: y, month: m, day: d, hour: Int(rest / 3600), minute: Int(rest % 3600 / 60), second: Int(rest % 60))
    }

    /// The offset of this machine's time zone at a given wall-clock time, in minutes.
    public static func localOffsetMinutes(at wall: WallClock) -> Int {
        var tm = Glibc.tm()
        tm.tm_year = Int32(wall.year - 1900)
        tm.tm_mon = Int32(wall.month - 1)
        tm.tm_mday = Int32(wall.day)
        tm.tm_hour = Int32(wall.hour)
        tm.tm_min = Int32(wall.minute)
        tm.tm_sec = Int32(wall.second)
        tm.tm_isdst = -1
        let t = mktime(&tm)
        if t == -1 { return 0 }
        return Int(tm.tm_gmtoff / 60)
    }

    /// The offset of this machine's time zone at an instant, in minutes.
    public static func localOffsetMinutes(atInstant instant: Int64) -> Int {
        var t = time_t(instant)
        var tm = Glibc.tm()
        guard localtime_r(&t, &tm) != nil else { return 0 }
        return Int(tm.tm_gmtoff / 60)
    }

    /// Parses `YYYY:MM:DD HH:MM:SS` (EXIF) or `YYYY-MM-DDTHH:MM[:SS][.frac][Z|±HH:MM|±HHMM]`
    /// (ISO 8601, as FFmpeg reports and XMP stores). Returns the wall clock and the offset, if any.
    public static func parse(_ text: String) -> (WallClock, offsetMinutes: Int?)? {
        var bytes = Array(text.utf8)
        // XMP may leave the seconds out (`2019-07-04T12:30+02:00`): read them as 00.
        if bytes.count >= 16, bytes.count == 16 || !(48...57).contains(bytes[16]) && bytes[16] != UInt8(ascii: ":") {
            bytes.insert(contentsOf: Array(":00".utf8), at: 16)
        }
        guard bytes.count >= 19 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for i in range {
                guard (48...57).contains(bytes[i]) else { return nil }
                value = value * 10 + Int(bytes[i] - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        let wall = WallClock(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        guard wall.isPlausible else { return nil }
        var i = 19
        if i < bytes.count && bytes[i] == UInt8(ascii: ".") {
            i += 1
            while i < bytes.count && (48...57).contains(bytes[i]) { i += 1 }
        }
        var offset: Int?
        if i < bytes.count {
            if bytes[i] == UInt8(ascii: "Z") {
                offset = 0
            } else if bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
                offset = parseOffset(String(decoding: bytes[i...], as: UTF8.self))
            }
        }
        return (wall, offset)
    }

    /// Parses `+02:00`, `-0500`, `+01`.
    public static func parseOffset(_ text: String) -> Int? {
        let bytes = Array(text.utf8.filter { $0 != UInt8(ascii: ":") && $0 != 0 && $0 != 32 })
        guard let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-"),
              bytes.count == 3 || bytes.count == 5,
              bytes.dropFirst().allSatisfy({ (48...57).contains($0) })
        else { return nil }
        let digits = bytes.dropFirst().map { Int($0 - 48) }
        let hours = digits[0] * 10 + digits[1]
        let minutes = digits.count == 4 ? digits[2] * 10 + digits[3] : 0
        guard hours <= 14, minutes < 60 else { return nil }
        return (sign == UInt8(ascii: "-") ? -1 : 1) * (hours * 60 + minutes)
    }

    /// ISO 8601 text for an instant (a file time, a date added): in this machine's time
    /// zone, with that zone's offset then, so that it names the same moment anywhere.
    public static func iso8601(instant: Int64) -> String {
        iso8601(instant: instant, offsetMinutes: localOffsetMinutes(atInstant: instant))
    }

    /// ISO 8601 text for a capture date: with its offset when known, else the wall clock
    /// of the machine's time zone with no offset.
    public static func iso8601(instant: Int64, offsetMinutes: Int?) -> String {
        let offset = offsetMinutes ?? localOffsetMinutes(atInstant: instant)
        let w = wallClock(instant, offsetMinutes: offset)
        var text = "\(String(w.year).leftPadded(4))-\(String(w.month).leftPadded(2))-\(String(w.day).leftPadded(2))"
            + "T\(String(w.hour).leftPadded(2)):\(String(w.minute).leftPadded(2)):\(String(w.second).leftPadded(2))"
        if let offsetMinutes {
            if offsetMinutes == 0 { text += "Z" } else {
                let sign = offsetMinutes < 0 ? "-" : "+"
                let a = abs(offsetMinutes)
                text += "\(sign)\(String(a / 60).leftPadded(2)):\(String(a % 60).leftPadded(2))"
            }
        }
        return text
    }
}
