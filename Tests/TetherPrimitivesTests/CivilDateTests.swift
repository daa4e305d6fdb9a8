import Testing
import TetherPrimitives

/// Civil-date arithmetic against Python's `datetime.date` (proleptic Gregorian, an independent implementation):
/// `date(y, m, d).toordinal() - date(1970, 1, 1).toordinal()`.
@Suite struct CivilDateTests {
    static let vectors: [(year: Int64, month: Int64, day: Int64, days: Int64)] = [
        (1970, 1, 1, 0), (1969, 12, 31, -1), (2000, 3, 1, 11_017), (2024, 2, 29, 19_782),
        (1, 1, 1, -719_162), (9999, 12, 31, 2_932_896), (1900, 3, 1, -25_508),
    ]

    @Test func daysAgreeWithPythonsCalendar() {
        for vector in Self.vectors {
            #expect(CivilDate.days(year: vector.year, month: vector.month, day: vector.day) == vector.days, "\(vector)")
            let civil = CivilDate.civil(days: vector.days)
            #expect(civil.year == vector.year && civil.month == vector.month && civil.day == vector.day, "\(vector)")
        }
    }

    /// Every day from 1600 to 2400 round-trips and follows the day before (leap days included).
    @Test func everyDayRoundTripsInOrder() {
        var previous = CivilDate.days(year: 1599, month: 12, day: 31)
        for year: Int64 in 1600...2400 {
            for month: Int64 in 1...12 {
                for day in 1...CivilDate.daysIn(month: month, year: year) {
                    let days = CivilDate.days(year: year, month: month, day: day)
                    let civil = CivilDate.civil(days: days)
                    guard days == previous + 1, civil.year == year, civil.month == month, civil.day == day else {
                        Issue.record("\(year)-\(month)-\(day): day \(days) after \(previous), back as \(civil)")
                        return
                    }
                    previous = days
                }
            }
        }
    }

    @Test func leapYearsByTheGregorianRule() {
        #expect(CivilDate.daysIn(month: 2, year: 1900) == 28)
        #expect(CivilDate.daysIn(month: 2, year: 2000) == 29)
        #expect(CivilDate.daysIn(month: 2, year: 2024) == 29)
        #expect(CivilDate.daysIn(month: 2, year: 2023) == 28)
        #expect(CivilDate.daysIn(month: 4, year: 2023) == 30 && CivilDate.daysIn(month: 12, year: 2023) == 31)
    }
}
