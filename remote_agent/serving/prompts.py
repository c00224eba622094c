"""Prompts of an exact length in tokens, for any server.

For a model folder the agent wrote (one CJK character a token: remote_agent/serving/model_folder.py) a prompt of S
tokens is S characters, exactly.  For any other server the prompt is common English words (one token each in the
usual BPE vocabularies), and the number of words that makes S tokens on this server is found once from its
``usage.prompt_tokens`` (``calibrate``).  Stdlib only (the folder's tokenizer is imported where it is used).
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

from remote_agent.serving.client import Client
from remote_agent.serving.sse import make_request

# Words for prompts when the server's tokenizer is not at hand: each is one token in the common BPE vocabularies
# (with its leading space); the count is then corrected against usage.prompt_tokens.
_WORD_TEXT = ("the of and to in is was for on as with by at from that this which are be an or it not have "
              "one all were has but more can time two new first may other been its into only also after "
              "over most some there such made many these when any city world year part state during")
_WORDS = tuple(_WORD_TEXT.split())


class Prompts:
    """Random prompts of S tokens: exact for the folders the agent writes; else words checked against usage."""

    def __init__(self, seed: int, vocab: Optional[int]) -> None:
        self.seed, self.vocab = seed, vocab
        self.words_for: Dict[int, int] = {}  # S -> words that made S tokens on this server
        self.checked: Dict[int, Optional[int]] = {}  # S -> usage.prompt_tokens of the calibration, None: unchecked

    def count_tokens(self) -> Optional[Callable[[str], int]]:
        if self.vocab is None:
            return None
        from remote_agent.serving.char_tokens import count_tokens

        return count_tokens

    def text(self, tokens: int, index: int) -> str:
        seed = self.seed * 1000003 + index * 7919 + tokens
        if self.vocab is not None:
            from remote_agent.serving.char_tokens import prompt_text

            return prompt_text(tokens, seed, self.vocab)
        import random

        rng = random.Random(seed)
        return " ".join(rng.choice(_WORDS) for _ in range(self.words_for.get(tokens, tokens)))

    def calibrate(self, client: Client, tokens: int) -> None:
        """Find how many words make ``tokens`` prompt tokens on this server (usage.prompt_tokens), 5 tries."""
        if self.vocab is not None or tokens in self.words_for:
            return
        words, seen = tokens, None
        for attempt in range(5):
            self.words_for[tokens] = words
            outcome = client.run(client.send(make_request(client.endpoint, self.text(tokens, -1 - attempt), tokens,
                                                          2)))
            seen = outcome.usage_prompt_tokens
            if seen is None or seen == tokens:
                break
            words = max(1, words + (tokens - seen) if abs(tokens - seen) < 8 else round(words * tokens / seen))
        self.checked[tokens] = seen
