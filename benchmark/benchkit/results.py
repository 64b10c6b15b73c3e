"""What a run (or one variant of it) measured: values per system and row, notes, errors."""


class Results:
    """(system, workload) -> one value per repetition (None when it failed), with notes and read errors."""

    def __init__(self):
        self.values = {}  # (system, workload) -> [value per repetition]
        self.notes = {}  # (system, workload) -> [text]
        self.errors = []  # read errors, in full
        self.capped = {}  # (system, workload) -> [files read before the cap, per repetition]

    def add(self, system, workload, value):
        self.values.setdefault((system, workload), []).append(value)

    def note(self, system, workload, text):
        notes = self.notes.setdefault((system, workload), [])
        if text not in notes:
            notes.append(text)

    def get(self, system, workload):
        return [v for v in self.values.get((system, workload), []) if v is not None]
