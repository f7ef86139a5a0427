"""``python -m tests.support.serve``: the replica with the test scenarios on top.

Everything ``python -m crawler.replica`` takes, plus:

- ``--planted``: duplicate talks, near-duplicate abstracts, pages without usable JSON and extra banner
  blocks (:mod:`tests.scenarios.planted`); the ground truth is then what a correct crawl and publish give;
- ``--hostile``: broken variants of a few lecture pages and a listing that lies about its size
  (:mod:`tests.scenarios.hostile`); ``--hostile-only V,...`` serves only the variants named;
  ``--hostile-plan PATH`` writes which lecture got which variant.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from crawler.replica.server import ReplicaServer, build_parser, serve, site_from_args
from tests.scenarios.hostile import KNOWN_VARIANTS, VARIANTS, hostile_overrides, plan
from tests.scenarios.planted import plant_cases


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(prog="python -m tests.support.serve")
    scenarios = parser.add_argument_group("test scenarios")
    scenarios.add_argument(
        "--planted",
        action="store_true",
        help="plant duplicate talks, near-duplicate abstracts, pages without JSON and extra template blocks",
    )
    scenarios.add_argument(
        "--hostile",
        action="store_true",
        help="serve broken variants of a few lecture pages and a lecture list that lies about its size",
    )
    scenarios.add_argument(
        "--hostile-only",
        default=None,
        metavar="VARIANT,...",
        help=f"serve only these hostile variants (known: {', '.join(KNOWN_VARIANTS)})",
    )
    scenarios.add_argument(
        "--hostile-plan", type=Path, default=None, help="write the hostile lectures' variants as JSON"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        site = site_from_args(args)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    planted = None
    if args.planted:
        site, planted = plant_cases(site, args.seed)
    variants: dict[str, str] | None = None
    if args.hostile_only is not None:
        chosen = tuple(v.strip() for v in args.hostile_only.split(",") if v.strip())
        try:
            variants = plan(site, variants=chosen or VARIANTS)
        except ValueError as exc:
            print(str(exc), file=sys.stderr)
            return 2
    elif args.hostile:
        variants = plan(site)
    overrides = hostile_overrides(variants) if variants is not None else None

    def write_plan(server: ReplicaServer) -> None:
        if args.hostile_plan is not None:
            args.hostile_plan.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(variants or {}, indent=1, sort_keys=True) + "\n"
            args.hostile_plan.write_text(text, encoding="utf-8")

    return serve(
        args,
        site,
        overrides=overrides,
        truth_transform=planted.expected_records if planted is not None else None,
        on_started=write_plan,
        label=", hostile" if overrides is not None else "",
    )


if __name__ == "__main__":
    sys.exit(main())
