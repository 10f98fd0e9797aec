"""The seeding module: streams are independent, derivations are stable, and match the historical ones."""

import numpy as np
import pytest

from countdown_study.seeding import IPOStream, SamplerStream, SFTStream, Stream, derive_rng, derive_seed


def test_same_keys_give_the_same_numbers():
    assert derive_seed(7, 3, Stream.ROLLOUT) == derive_seed(7, 3, Stream.ROLLOUT)
    assert derive_rng(7, 3, 1).integers(1 << 30) == derive_rng(7, 3, 1).integers(1 << 30)


def test_streams_steps_and_seeds_differ():
    seeds = {derive_seed(s, step, stream) for s in range(3) for step in range(4) for stream in Stream}
    assert len(seeds) == 3 * 4 * len(Stream)
    draws = {
        int(derive_rng(1, step, stream).integers(1 << 62)) for step in range(4) for stream in SamplerStream
    }
    assert len(draws) == 4 * len(SamplerStream)
    # numpy's SeedSequence ignores trailing zero words (documented in the module)
    assert derive_seed(1, 2) == derive_seed(1, 2, 0) != derive_seed(1, 2, 1)


def test_derivations_equal_the_ones_results_were_made_with():
    # training rollouts and probes: SeedSequence([seed, step, stream]).generate_state(1)[0]
    assert derive_seed(5, 9, Stream.PROBE) == int(np.random.SeedSequence([5, 9, 1]).generate_state(1)[0])
    # evaluation batches: SeedSequence([seed, batch]).generate_state(1)[0]
    assert derive_seed(5, 2) == int(np.random.SeedSequence([5, 2]).generate_state(1)[0])
    # samplers, IPO and SFT: default_rng([seed, *keys])
    expected = np.random.default_rng([4, 5, 0]).integers(0, 200, size=8)
    assert derive_rng(4, 5, SamplerStream.STEP).integers(0, 200, size=8).tolist() == expected.tolist()
    assert (
        derive_rng(0, IPOStream.ORDER).permutation(10).tolist()
        == np.random.default_rng([0, 3]).permutation(10).tolist()
    )
    sft = derive_rng(0, 12, SFTStream.TRACES, 3).integers(2**62)
    assert sft == np.random.default_rng([0, 12, 1, 3]).integers(2**62)
    # and one pinned value, so a change of numpy's SeedSequence would be seen
    assert derive_seed(0, 0, Stream.ROLLOUT) == 2968811710


def test_negative_seeds_are_refused_with_the_values():
    with pytest.raises(ValueError, match=r"non-negative.*\[-1, 2\]"):
        derive_seed(-1, 2)
