"""A listing step's intent: consecutive pages' intents joined into the one a lister stores before it sends them."""

from __future__ import annotations

from s3bulk.aws.intents import PageIntent
from s3bulk.aws.messages import pack
from s3bulk.store import ObjectInfo


def page(n: int, keys: list[str], *, done: bool = False, sent: int = 0, borrowed: int = 0) -> PageIntent:
    objects = [ObjectInfo(k, 10, f"e{k}") for k in keys]
    messages = list(pack("job", f"0000-{n:09d}", objects, 1000))
    return PageIntent.of(
        messages,
        shard=0,
        page=n,
        cursor=None if done else f"after-{keys[-1]}",
        done=done,
        last_key=keys[-1],
        scanned=len(keys) + 1,
        listed=len(keys),
        listed_bytes=10 * len(keys),
        skipped=1,
        sent=sent,
        borrowed=borrowed,
    )


def test_joined_pages_start_at_the_first_end_at_the_last_and_carry_every_count_and_message() -> None:
    pages = [page(4, ["a", "b"]), page(5, ["c"], sent=1), page(6, ["d", "e", "f"], done=True, sent=2, borrowed=1)]
    step = PageIntent.joined(pages)
    assert (step.page, step.pages, step.cursor, step.done, step.last_key) == (4, 3, None, True, "f")
    assert (step.scanned, step.listed, step.listed_bytes, step.skipped, step.sent, step.borrowed) == (9, 6, 60, 3, 3, 1)
    assert [b.batch_id for b in step.batches()] == [m.batch_id for p in pages for m in p.batches()]
    assert [o.key for b in step.batches() for o in b.objects()] == ["a", "b", "c", "d", "e", "f"]
    # Stored and read back as the redo reads it; a step of steps is the same step.
    assert PageIntent.load(step.dump()) == step == PageIntent.joined([PageIntent.joined(pages[:2]), pages[2]])


def test_an_intent_stored_before_steps_reads_as_one_page() -> None:
    old = page(7, ["x"]).model_dump(exclude={"pages"})
    assert PageIntent.model_validate(old).pages == 1
