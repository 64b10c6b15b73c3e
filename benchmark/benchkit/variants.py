"""The variants of conditions beside the loopback run (issue 20): the same cold rows and both of their limits (curl to
/dev/null, download-then-read), the imgfs sequence and the 20 ms rows, under other conditions. A target counts as met
only when it holds in every variant (benchkit/targets.py)."""
from .settings import (
    HARNESS_ICON_RANGE, HARNESS_LARGE, QUICK_HARNESS_LARGE, VARIANT_REPS)
from .processes import MountFailure, log
from .results import Results
from .netns import Namespace
from .origin import DelayLine, Origin
from .systems import ImgfsDefaults
from .before import grouped
from .tls import imgfs_trust_option


class Variant:
    def __init__(self, name, description, netns=False, corpus="standard", back_to_back=False, https=False):
        self.name, self.description = name, description
        self.netns, self.corpus, self.back_to_back, self.https = netns, corpus, back_to_back, https


LOOPBACK = ("loopback", "origin nginx on 127.0.0.1, the 20 ms rows through the user-space delay line on 127.0.0.1; "
            "the standard corpus; the sequence with its pauses (warm passes between the cold ones, sync before "
            "drop_caches, the remount after the disk cache holds every entry); every system")
VARIANTS = [
    Variant("veth", "origin nginx inside a network namespace the run creates (`ip netns exec`), reached over a veth "
            "pair; the 20 ms rows through the delay line, which runs inside the namespace between the veth and "
            "nginx; standard corpus, imgfs only", netns=True),
    Variant("back-to-back", "loopback; the sequence without pauses: cold-large right after cold-small on the same "
            "mount, drop_caches without sync, the remount without waiting for the disk cache", back_to_back=True),
    Variant("icons", "loopback; the harness corpus: icons of 512–6,000 B (mean ≈ 1.6 KB) and 23 large files of "
            "1–48 MB with a 48 MB PNG", corpus="harness"),
    Variant("harness", "the three together, as in the independent harness: veth, the harness corpus, back to back",
            netns=True, corpus="harness", back_to_back=True),
    Variant("https-h2", "nginx over HTTPS with HTTP/2 (`listen … ssl http2`, a certificate the run makes with "
            "openssl), 20 ms through the delay line; cold rows only; imgfs with its default options (no transfer "
            "limits given) against `curl --http2 --parallel`, the same trust on both", https=True),
]
NAMES = [v.name for v in VARIANTS]


class Variants:
    """Sets up the chosen variants (corpora, namespace, origins, delay lines) once, and runs one repetition of each
    on demand; each keeps its own Results. bench.use() switches the bench between them and back to loopback."""

    def __init__(self, bench):
        self.bench = bench
        wanted = NAMES if bench.args.variants == "all" else bench.args.variants.split(",")
        unknown = [name for name in wanted if name not in NAMES]
        if unknown:
            raise SystemExit(f"bench: unknown variant(s) {', '.join(unknown)}; choose from {', '.join(NAMES)}")
        self.reps = bench.args.reps or (1 if bench.quick else VARIANT_REPS)
        self.base = bench.context()
        imgfs = next((s for s in self.base["systems"] if s.name == "imgfs"), None)
        self.active = [v for v in VARIANTS if v.name in wanted and imgfs is not None
                       and not (v.https and bench.delay is None)]
        if imgfs is None:
            log("variants: imgfs is not among --systems; only the loopback run")
        self.contexts, self.notes = {}, {}
        self.namespace = None
        harness = None
        for variant in self.active:
            bench.use(self.base)
            if variant.corpus == "harness":
                if harness is None:
                    bench.load_corpus("corpus-harness", 300 if bench.quick else 2000,
                                      QUICK_HARNESS_LARGE if bench.quick else HARNESS_LARGE, HARNESS_ICON_RANGE)
                    harness = bench.context()
                else:
                    bench.use({k: v for k, v in harness.items() if k not in ("origin", "delay")})
            bench.results = Results()
            bench.systems = [s for s in self.base["systems"] if bench.is_imgfs(s)]  # imgfs, and its --before build
            options = []
            if variant.https:
                imgfs_options, options, trust = imgfs_trust_option(bench.args.imgfs, bench.certificates.ca)
                self.notes[variant.name] = trust
                defaults = ImgfsDefaults(bench, bench.args.imgfs, imgfs_options)
                bench.systems = [defaults, *bench.before_twins(defaults)]
                bench.delay = DelayLine(bench.owned, bench.work, bench.origin.tls_port, scheme="https",
                                        name="delay-line-tls")
                options = ["--http2"] + options
                self.curl_options = options
                bench.commands["delay line (https-h2)"] = " ".join(bench.delay.command)
            elif variant.netns or variant.corpus != "standard":
                if variant.netns and self.namespace is None:
                    self.namespace = Namespace(bench.owned, bench.commands)
                netns = self.namespace if variant.netns else None
                bench.origin = Origin(bench.owned, bench.work, bench.corpus, netns=netns, name=f"nginx-{variant.name}")
                bench.delay = None if bench.args.no_delay else DelayLine(
                    bench.owned, bench.work, bench.origin.port, netns=netns, name=f"delay-line-{variant.name}")
                bench.commands[f"nginx ({variant.name})"] = " ".join(bench.origin.command)
                if bench.delay:
                    bench.commands[f"delay line ({variant.name})"] = " ".join(bench.delay.command)
            bench.warm_origin([bench.origin.url] * (not variant.https) + ([bench.delay.url] if bench.delay else []),
                              options)
            self.contexts[variant.name] = bench.context()
        bench.use(self.base)

    def run_repetition(self, rep):
        """One repetition of every variant; imgfs and its --before build alternate which goes first (rep)."""
        bench = self.bench
        for variant in self.active:
            bench.use(self.contexts[variant.name])
            log(f"variant {variant.name}")
            try:
                if variant.https:
                    bench.cold_limits(bench.delay.url, "@20ms", options=self.curl_options)
                    for system in grouped(bench.systems, rep)[0]:
                        bench.run_cold_each(system, bench.delay.url, "@20ms")
                    # Right after imgfs's cold-large: floorfs serving the same files by READ and the tmpfs write,
                    # the floor of that row's CPU per MB.
                    bench.fuse_floor.rows().large()
                else:
                    self.run_plain(variant, rep)
            except MountFailure as error:
                log(f"variant {variant.name}: {error}")
                bench.results.errors.append(f"{variant.name}: {error}")
            finally:
                self.contexts[variant.name] = bench.context()
                bench.use(self.base)

    def run_plain(self, variant, rep):
        bench = self.bench
        bench.cold_limits(bench.origin.url)
        bench.warm_limits()
        systems = grouped(bench.systems, rep)[0]
        for system in systems:
            bench.run_sequence(system, back_to_back=variant.back_to_back)
        for system in systems if bench.delay else []:
            bench.delay_limits(bench.delay.url)  # curl's 20 ms passes right before imgfs's, as in loopback
            bench.run_cold_each(system, bench.delay.url, "@20ms")

    def described(self):
        """[(name, description, Results, systems, corpus text)] of loopback and every variant run, in order."""
        rows = [(LOOPBACK[0], LOOPBACK[1], self.base["results"], self.base["systems"], self.base["corpus_text"])]
        for variant in self.active:
            context = self.contexts[variant.name]
            text = variant.description + (f" ({self.notes[variant.name]})" if variant.name in self.notes else "")
            if variant.netns and self.namespace:
                text += f"; {self.namespace.description}"
            rows.append((variant.name, text, context["results"], context["systems"], context["corpus_text"]))
        return rows
