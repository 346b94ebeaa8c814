import CCrypto
import Foundation

/// Incremental SHA-256 (OpenSSL's EVP interface), fed while bytes are copied.
public struct SHA256Hasher: ~Copyable {
    private let context: OpaquePointer

    public init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest of the bytes so far, as 64 lowercase hex digits; the hasher goes on
    /// (a copy of its state is finished).
    public func digestSoFarHex() -> String? {
        guard let copy = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(copy) }
        guard EVP_MD_CTX_copy_ex(copy, context) == 1 else { return nil }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(copy, &digest, &length) == 1 else { return nil }
        return hexString(digest.prefix(Int(length)))
    }

    /// The digest as 64 lowercase hex digits.
    public consuming func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return hexString(digest.prefix(Int(length)))
    }
}

/// MD5 of `bytes` as 32 lowercase hex digits: only where a specification names it (the
/// freedesktop.org thumbnail names), never to identify content.
public func md5Hex(_ bytes: [UInt8]) -> String {
    var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    _ = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_md5(), nil) }
    return hexString(digest.prefix(Int(length)))
}

private let hexDigits = Array("0123456789abcdef".utf8)

func hexString<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        out.append(hexDigits[Int(byte >> 4)])
        out.append(hexDigits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// True for a string of 64 lowercase hex digits (a blob name).
public func isSHA256Hex(_ text: String) -> Bool {
    text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
}

/// One-shot digests.
public enum SHA256Digest {
    /// SHA-256 of `data`, as 64 lowercase hex digits.
    public static func hex(of data: Data) -> String {
        var hasher = SHA256Hasher()
        data.withUnsafeBytes { hasher.update($0) }
        return hasher.finalizeHex()
    }
}
