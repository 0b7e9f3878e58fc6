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
        // Swift's description holds the shortest round-trip digits; take them and the exponent.
        var text = "\(abs(number))"
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
        let decimalExponent = pointAt + exponent - 1   // the exponent of the first digit
        let sign = number < 0 ? "-" : ""
        if decimalExponent < -4 || decimalExponent >= 6 {
            var mantissa = String(digits.first ?? "0")
            if digits.count > 1 { mantissa += "." + digits.dropFirst() }
            let magnitude = abs(decimalExponent)
            return sign + mantissa + "e" + (decimalExponent < 0 ? "-" : "+") + (magnitude < 10 ? "0" : "") + String(magnitude)
        }
        if decimalExponent < 0 {
            return sign + "0." + String(repeating: "0", count: -decimalExponent - 1) + digits
        }
        let integerDigits = decimalExponent + 1
        if digits.count <= integerDigits {
            return sign + digits + String(repeating: "0", count: integerDigits - digits.count)
        }
        return sign + digits.prefix(integerDigits) + "." + digits.dropFirst(integerDigits)
    }
}
