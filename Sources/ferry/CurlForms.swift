#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryBytes

/// The request-shaping options of curl that `ferry fetch` takes beyond the basics: `-G` with `-d` and
/// `--data-urlencode` (the data goes into the query), `-F` (a multipart/form-data body), `-u` (Basic
/// authorization), and `-O` (the output file named after the URL). Pure text work, tested against curl.
///
/// ```swift
/// CurlForms.urlencode("a b&c")                          // "a+b%26c"
/// CurlForms.dataURLEncode("q=hello world")              // "q=hello+world"
/// CurlForms.remoteName("https://h/p/poster.jpg?x=1")    // "poster.jpg"
/// ```
enum CurlForms {
    /// RFC 3986 unreserved bytes stay, a space is `+`, every other byte is %XX (uppercase), as curl's
    /// --data-urlencode writes (application/x-www-form-urlencoded).
    static func urlencode(_ text: String) -> String {
        var out = ""
        for b in text.utf8 {
            if b == 0x20 {
                out += "+"
                continue
            }
            let unreserved = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x2E
                || b == 0x5F || b == 0x7E
            out += unreserved ? String(UnicodeScalar(b)) : "%" + String(b, radix: 16, uppercase: true).leftPadded(2)
        }
        return out
    }

    /// One `--data-urlencode` argument: `content` is encoded whole; `name=content` keeps `name=` and encodes the
    /// rest; `=content` encodes the rest without the `=`; `@file` / `name@file` read the file's content.
    static func dataURLEncode(_ arg: String, readFile: (String) throws(CommandFailure) -> [UInt8] = defaultRead) throws(CommandFailure) -> String {
        if let eq = arg.firstIndex(of: "=") {
            let name = String(arg[..<eq]), content = String(arg[arg.index(after: eq)...])
            return name.isEmpty ? urlencode(content) : name + "=" + urlencode(content)
        }
        if let at = arg.firstIndex(of: "@") {
            let name = String(arg[..<at]), path = String(arg[arg.index(after: at)...])
            let content = String(decoding: try readFile(path), as: UTF8.self)
            return name.isEmpty ? urlencode(content) : name + "=" + urlencode(content)
        }
        return urlencode(arg)
    }

    static func defaultRead(_ path: String) throws(CommandFailure) -> [UInt8] { path == "-" ? readStdin() : try readFile(path) }

    /// `-u user:password` as an Authorization field (curl sends Basic).
    static func basicAuthorization(_ credentials: String) -> String {
        "Basic " + Base64.encode(Array(credentials.utf8))
    }

    /// `-O`: the URL's last path segment (curl refuses a URL without one).
    static func remoteName(_ url: String) -> String? {
        let path = URLParts(url).path
        let name = path[(path.lastIndex(of: "/").map(path.index(after:)) ?? path.startIndex)...]
        return name.isEmpty ? nil : String(name)
    }

    /// `-F name=value` and `-F name=@file[;type=T]` as a multipart/form-data body (RFC 7578), and its Content-Type.
    static func multipart(_ fields: [String], boundary: String,
                          readFile: (String) throws(CommandFailure) -> [UInt8] = defaultRead) throws(CommandFailure) -> (body: [UInt8], contentType: String) {
        var body: [UInt8] = []
        for field in fields {
            guard let eq = field.firstIndex(of: "=") else {
                throw CommandFailure(code: .usage, message: "-F needs name=value or name=@file, not \"\(field)\"")
            }
            let name = String(field[..<eq])
            var value = String(field[field.index(after: eq)...])
            body += Array("--\(boundary)\r\n".utf8)
            if value.hasPrefix("@") || value.hasPrefix("<") {
                let isFile = value.hasPrefix("@")
                value.removeFirst()
                var type = "application/octet-stream"
                let parts = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2, parts[1].hasPrefix("type=") {
                    type = String(parts[1].dropFirst(5))
                    value = String(parts[0])
                }
                let content = try readFile(value)
                if isFile {
                    let filename = value.split(separator: "/").last.map(String.init) ?? value
                    body += Array("Content-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\nContent-Type: \(type)\r\n\r\n".utf8)
                } else {
                    body += Array("Content-Disposition: form-data; name=\"\(name)\"\r\n\r\n".utf8)
                }
                body += content
            } else {
                body += Array("Content-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)".utf8)
            }
            body += Array("\r\n".utf8)
        }
        body += Array("--\(boundary)--\r\n".utf8)
        return (body, "multipart/form-data; boundary=\(boundary)")
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// Standard base64 (RFC 4648, with padding), for `-u`'s Basic authorization.
enum Base64 {
    static func encode(_ bytes: [UInt8]) -> String {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 2 < bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            for shift in [18, 12, 6, 0] { out.append(table[Int(n >> UInt32(shift) & 63)]) }
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out.append(table[Int(n >> 18 & 63)])
            out.append(table[Int(n >> 12 & 63)])
            out.append(rest == 2 ? table[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }
}
