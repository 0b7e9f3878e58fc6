import FeatureFlags

/// Numbers as flagd's Go evaluator prints them with `fmt`'s `%v` (`strconv.FormatFloat(x, 'g',
/// -1, 64)`): the shortest digits that round-trip, in fixed notation unless the decimal
/// exponent is below −4 or at least 6 — then `d.ddde±XX`. Integral values carry no `.0`.
enum GoNumberText {
    /// `%v` of `number`: "1", "1.2", "0.0001", "1e-05", "123456", "1e+06"; NaN and infinities as Go
    /// prints them ("NaN", "+Inf", "-Inf").
    static func shortest(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Inf" : "+Inf" }
        if number == 0 { return number.sign == .minus ? "-0" : "0" }
        let (digits, decimalExponent) = shortestDigits(abs(number))
        let sign = number < 0 ? "-" : ""
        if decimalExponent < -4 || decimalExponent >= 6 {
            var mantissa = String(digits.first ?? "0")
            if digits.count > 1 { mantissa += "." + digits.dropFirst() }
            let magnitude = abs(decimalExponent)
            return sign + mantissa + "e" + (decimalExponent < 0 ? "-" : "+") + (magnitude < 10 ? "0" : "") + String(magnitude)
        }
        return sign + positional(digits, decimalExponent)
    }

    /// `strconv.FormatFloat(number, 'f', -1, 64)`: the shortest round-trip digits, never an
    /// exponent ("1000000000000000000000", "0.0000001", "1.5"); integral values carry no `.0`.
    static func fixed(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Inf" : "+Inf" }
        if number == 0 { return number.sign == .minus ? "-0" : "0" }
        let (digits, decimalExponent) = shortestDigits(abs(number))
        return (number < 0 ? "-" : "") + positional(digits, decimalExponent)
    }

    /// The shortest round-trip decimal digits of a finite positive `number` (no leading or
    /// trailing zeros) and the decimal exponent of the first digit.
    private static func shortestDigits(_ number: Double) -> (digits: String, exponent: Int) {
        // Swift's description holds the shortest round-trip digits; take them and the exponent.
        var text = "\(number)"
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(text[text.index(after: e)...]) ?? 0
            text = String(text[..<e])
        }
        var digits = ""
        var pointAt = 0
        if let dot = text.firstIndex(of: ".") {
            digits = String(text[..<dot]) + String(text[text.index(after: dot)...])
            pointAt = text.distance(from: text.startIndex, to: dot)
        } else {
            digits = text
            pointAt = text.count
        }
        // Normalise: no leading zeros (moving the point), no trailing zeros.
        while digits.count > 1, digits.first == "0" {
            digits.removeFirst()
            pointAt -= 1
        }
        while digits.count > 1, digits.last == "0" { digits.removeLast() }
        return (digits, pointAt + exponent - 1)
    }

    /// `digits` with the first at decimal exponent `exponent`, written without an exponent.
    private static func positional(_ digits: String, _ exponent: Int) -> String {
        if exponent < 0 { return "0." + String(repeating: "0", count: -exponent - 1) + digits }
        let integerDigits = exponent + 1
        if digits.count <= integerDigits { return digits + String(repeating: "0", count: integerDigits - digits.count) }
        return digits.prefix(integerDigits) + "." + digits.dropFirst(integerDigits)
    }
}
