/// One reading of the memory figures `MemAvailableMonitor` watches, in bytes; nil where a file is missing.
struct MemorySnapshot: Equatable {
    var available: Int?
    var total: Int?
    var cgroupV1Limit: Int?
    var cgroupV1Usage: Int?
    var cgroupV2Max: Int?
    var cgroupV2Current: Int?

    /// Reads every file in `files` once.
    static func read(_ files: MemoryFiles) -> MemorySnapshot {
        var snapshot = MemorySnapshot()
        if let text = SystemFile.contents(of: files.meminfo) {
            snapshot.available = meminfoValue("MemAvailable", in: text)
            snapshot.total = meminfoValue("MemTotal", in: text)
        }
        snapshot.cgroupV1Limit = files.cgroupV1Limit.flatMap(SystemFile.number(at:))
        snapshot.cgroupV1Usage = files.cgroupV1Usage.flatMap(SystemFile.number(at:))
        snapshot.cgroupV2Max = files.cgroupV2Max.flatMap(SystemFile.number(at:))
        snapshot.cgroupV2Current = files.cgroupV2Current.flatMap(SystemFile.number(at:))
        return snapshot
    }

    /// The value of a "Key:   123 kB" line (spaces or tabs) in bytes.
    static func meminfoValue(_ key: String, in text: String) -> Int? {
        for line in text.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, fields[0] == key + ":", let value = Int(fields[1]) else { continue }
            let isKibibytes = fields.count >= 3 && fields[2].lowercased() == "kb"
            return isKibibytes ? value * 1024 : value
        }
        return nil
    }

    /// The default low-memory threshold: 5 % of MemTotal, at least 256 MiB.
    static func defaultThreshold(total: Int?) -> Int {
        max((total ?? 0) / 20, 256 << 20)
    }

    /// What is short, in words, or nil when memory is plentiful: MemAvailable under `threshold` (or the default),
    /// or a cgroup usage above `usageFraction` of a limit that is below MemTotal.
    func pressure(threshold: Int?, usageFraction: Double) -> String? {
        var reasons: [String] = []
        if let available {
            let limit = threshold ?? Self.defaultThreshold(total: total)
            if available < limit {
                reasons.append("MemAvailable \(Self.mebibytes(available)) below \(Self.mebibytes(limit))")
            }
        }
        if let reason = cgroupPressure("cgroup v1", limit: cgroupV1Limit, usage: cgroupV1Usage, usageFraction) {
            reasons.append(reason)
        }
        if let reason = cgroupPressure("cgroup v2", limit: cgroupV2Max, usage: cgroupV2Current, usageFraction) {
            reasons.append(reason)
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    private func cgroupPressure(_ name: String, limit: Int?, usage: Int?, _ fraction: Double) -> String? {
        guard let limit, let usage, limit > 0 else { return nil }
        if let total, limit >= total { return nil }
        guard Double(usage) > Double(limit) * fraction else { return nil }
        let percent = Int((fraction * 100).rounded())
        return "\(name) usage \(Self.mebibytes(usage)) above \(percent) % of its limit \(Self.mebibytes(limit))"
    }

    static func mebibytes(_ bytes: Int) -> String {
        "\(bytes >> 20) MiB"
    }
}
