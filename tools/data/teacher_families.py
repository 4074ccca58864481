"""Families of sentences for the teacher stage (teacher_data.py): a short sentence, the same sentence with one word
swapped for a WordNet synonym, and the same sentence with one word swapped for a look-alike word of another meaning
("the soup is hot", "the broth is hot", "the soap is hot"). The teacher embeds every member, so its rows say how near
each variant stays; a batch that holds a whole family lets the distillation term teach that one letter can change a
meaning and a new word can keep it. Only training data is used: sentences of the training split and other English
texts, synonyms from training synsets. Every choice is drawn by prepare.fraction, so the families are the same on
every run. docs/data.md, "Sentence families", describes the file.
"""

from prepare import fraction

MAX_WORDS = 24  # longer sentences are left out: a one-word change matters less in them
SHORTEST = 3  # words a word must have to be swapped (no "a", "of", "is")
STOP = frozenset("the and for with that this from have has had was were are not but you your his her its they them "
                 "their she him our out who what when which will would can could one two all any some into onto "
                 "than then there these those been being very more most such only also just over under about".split())


def vocabulary(items):
    """(synonyms, lookalikes) from the training synsets' single-word lemmas: word -> its first training synset's
    other single-word lemmas, and word -> same-length words one letter apart that share no training synset with it."""
    lemmas_of = {}
    for _, group, split, role, text in items:
        if split == "train" and role == "lemma":
            word = text.lower()
            if word.isalpha() and len(word) >= SHORTEST:
                lemmas_of.setdefault(group, []).append(word)
    synonyms, groups_of = {}, {}
    for group in sorted(lemmas_of):
        words = lemmas_of[group]
        for word in words:
            groups_of.setdefault(word, set()).add(group)
            others = [w for w in words if w != word]
            if others and word not in synonyms:
                synonyms[word] = others
    by_pattern = {}
    for word in groups_of:
        for i in range(len(word)):
            by_pattern.setdefault((word[:i], word[i + 1:]), []).append(word)
    lookalikes = {}
    for words in by_pattern.values():
        for a in words:
            for b in words:
                if a != b and not groups_of[a] & groups_of[b]:
                    lookalikes.setdefault(a, set()).add(b)
    return synonyms, {word: sorted(others) for word, others in lookalikes.items()}


def swap(words, at, replacement):
    """The sentence with words[at] replaced, keeping a capital first letter."""
    if words[at][:1].isupper():
        replacement = replacement[:1].upper() + replacement[1:]
    return " ".join(words[:at] + [replacement] + words[at + 1:])


def variant(sentence, table, kind):
    """The sentence with one swappable word replaced from `table` (both drawn by fraction), or None."""
    words = sentence.split(" ")
    spots = [i for i, w in enumerate(words)
             if w.isalpha() and len(w) >= SHORTEST and w.lower() not in STOP and w.lower() in table]
    if not spots:
        return None
    at = min(spots, key=lambda i: fraction("family-spot", kind, sentence, i))
    choices = table[words[at].lower()]
    return swap(words, at, min(choices, key=lambda c: fraction("family-word", kind, sentence, c)))


def families(items, extras, limit):
    """At most `limit` families (0: none), [sentence, variant...] with two or three members, from the training split's
    usage examples and the other English texts of at most MAX_WORDS words, drawn by fraction."""
    if not limit:
        return []
    synonyms, lookalikes = vocabulary(items)
    sentences = {text for _, _, split, role, text in items if split == "train" and role == "example"}
    sentences |= {text for _, text in extras}
    sentences = [s for s in sentences if SHORTEST <= len(s.split()) <= MAX_WORDS]
    result = []
    for sentence in sorted(sentences, key=lambda s: fraction("family", s)):
        members = [sentence] + [v for v in (variant(sentence, synonyms, "synonym"),
                                            variant(sentence, lookalikes, "lookalike")) if v and v != sentence]
        if len(members) >= 2:
            result.append(members)
            if len(result) == limit:
                break
    return result
