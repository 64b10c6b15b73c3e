import ArgumentParser

/// The one advanced option of `imgfs mount`: `--tune KEY=VALUE`, the knobs of ``Tuning``.
struct AdvancedOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A tuning knob whose default was measured (repeatable; docs/PERFORMANCE.md): "
                + Tuning.keys.map(\.name).joined(separator: ", ") + ".",
            valueName: "key=value"))
    var tune: [String] = []

    func validate() throws {
        _ = try tuning()
    }

    /// The tuning `--tune` asks for (the defaults without it).
    func tuning() throws -> Tuning {
        try Tuning(tune)
    }
}
