/// UTC Gregorian date arithmetic without `Calendar`'s cost (Howard Hinnant's `days_from_civil` / `civil_from_days`).
enum CivilTime {
    /// A date and a time of day, UTC.
    struct Fields {
        var year: Int
        var month: Int
        var day: Int
        var hour = 0
        var minute = 0
        var second = 0
    }

    /// Seconds since the epoch of `fields`; nil if the date does not exist or a field is out of range (second 60 rolls over).
    static func seconds(_ fields: Fields) -> Int64? {
        guard (1...12).contains(fields.month), (1...daysIn(fields.month, of: fields.year)).contains(fields.day),
            (0...23).contains(fields.hour), (0...59).contains(fields.minute), (0...60).contains(fields.second),
            (-1_000_000...1_000_000).contains(fields.year)
        else { return nil }
        let days = Int64(daysSinceEpoch(year: fields.year, month: fields.month, day: fields.day))
        return days * 86_400 + Int64(fields.hour * 3_600 + fields.minute * 60 + fields.second)
    }

    /// The UTC date and time of day `seconds` after 1970-01-01T00:00:00Z.
    static func fields(_ seconds: Int64) -> Fields {
        let (days, rest) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let (day, second) = rest < 0 ? (days - 1, Int(rest + 86_400)) : (days, Int(rest))
        let (y, m, d) = civil(daysSinceEpoch: Int(day))
        return Fields(year: y, month: m, day: d, hour: second / 3_600, minute: second / 60 % 60, second: second % 60)
    }

    /// Days in `month` (1–12) of `year`.
    private static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
