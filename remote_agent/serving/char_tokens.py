"""The one-character tokenizer of the model folders the agent writes: its vocabulary, prompts and token counts.

Every token is one CJK character (``[UNK]`` aside): a prompt of S tokens is S characters, and a response's tokens
are counted by its characters (remote_agent/serving/model_folder.py says why this tokenizer).  Stdlib only: the
load client uses it on the host without importing transformers.
"""
from __future__ import annotations

import functools
from typing import List

# The characters transformers' streamer flushes at once (TextStreamer._is_chinese_char): 81,520 tokens; a larger
# vocabulary (Llama 3's 128,256) goes on in the supplementary private use planes (196k more), whose tokens the
# streamer holds back until a CJK token comes (several tokens in one chunk, still counted one by one).
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
               (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_MORE_RANGES = ((0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
UNKNOWN = "[UNK]"


def vocabulary(size: int) -> List[str]:
    """``size`` tokens: ``[UNK]`` (id 0, an ordinary token: never skipped when decoded), then CJK characters."""
    words = [UNKNOWN]
    for low, high in _CJK_RANGES + _MORE_RANGES:
        for point in range(low, high + 1):
            if len(words) >= size:
                return words
            words.append(chr(point))
    if len(words) < size:
        raise ValueError("a vocabulary of %d tokens is more than the %d one-character tokens this tokenizer has"
                         % (size, len(words)))
    return words


def is_token_char(char: str) -> bool:
    point = ord(char)
    return any(low <= point <= high for low, high in _CJK_RANGES + _MORE_RANGES)


def count_tokens(text: str) -> int:
    """Tokens in a text this tokenizer produced: one per CJK character (``[UNK]`` counts one too)."""
    return sum(1 for char in text if is_token_char(char)) + text.count(UNKNOWN)


def prompt_text(tokens: int, seed: int, vocab_size: int) -> str:
    """A random prompt of exactly ``tokens`` tokens (characters), never ``[UNK]``, from the first 20,000 tokens
    (CJK characters every tokenizer of this module has)."""
    import random

    words = _prompt_words(min(vocab_size, 20001))
    rng = random.Random(seed)
    return "".join(rng.choice(words) for _ in range(tokens))


@functools.lru_cache(maxsize=4)
def _prompt_words(size: int) -> List[str]:
    # Made once: building the list took 0.2 ms, paid by the load client for every request it made.
    return vocabulary(size)[1:]
