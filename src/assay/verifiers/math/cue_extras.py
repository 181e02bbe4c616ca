"""The words of each language of the cue table (cues.py) that read a closing sentence (issue 44), keyed
by the language's code and written for this table, in the order of `Language`'s fields:

- `and_words`: join several roots into one answer ("x = 2 und x = -3");
- `speakers`: open an answer with who says it ("ich denke 3", "je dirais : 48"), dropped;
- `hedges`: make a closing sentence a guess, not an answer ("vielleicht 3", "也许是 3");
- `negations`: make it a bound or a rejection ("nicht 3", "至少 3").
"""

from __future__ import annotations

EXTRA: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "zh": (
        ("和", "与", "及"),
        ("我认为", "我觉得", "我想", "我说"),
        ("也许", "或许", "大概是", "可能是"),
        ("不是", "不到", "至少", "至多", "超过", "不超过", "大于", "小于"),
    ),
    "ja": (
        ("と", "および"),
        ("私は",),
        ("たぶん", "かもしれ", "おそらく"),
        ("ではない", "以上", "以下", "未満"),
    ),
    "ko": (("및", "와", "과"), ("제 생각에는", "저는"), ("아마", "일지도"), ("아니", "이상", "이하", "미만")),
    "de": (
        ("und",),
        ("ich denke", "ich glaube", "ich sage", "ich würde sagen", "ich meine"),
        ("vielleicht", "eventuell", "möglicherweise", "könnte"),
        ("nicht", "kein", "keine", "mindestens", "höchstens"),
    ),
    "fr": (
        ("et",),
        ("je pense que", "je pense", "je crois que", "je dis", "je dirais"),
        ("peut-être", "probablement"),
        ("pas", "ne", "moins de", "plus de", "au moins", "au plus"),
    ),
    "es": (
        ("y", "e"),
        ("creo que", "pienso que", "digo", "yo diría"),
        ("quizás", "quizá", "tal vez", "puede ser"),
        ("menos de", "más de", "al menos"),  # "no" is read in Spanish sentences only (sentences.py)
    ),
    "ru": (
        ("и",),
        ("я думаю", "я считаю", "я говорю", "думаю"),
        ("возможно", "может быть", "наверное", "вероятно", "кажется", "скорее всего"),
        ("не", "нет", "меньше", "больше", "не менее", "не более", "минимум", "максимум", "по крайней мере"),
    ),
    "pt": (
        ("e",),
        ("eu acho que", "acho que", "eu digo", "eu diria"),
        ("talvez", "possivelmente"),
        ("não", "menos de", "mais de", "pelo menos"),
    ),
    "it": (
        ("e", "ed"),
        ("penso che", "credo che", "direi", "dico"),
        ("forse", "magari", "potrebbe"),
        ("non", "meno di", "più di", "almeno"),
    ),
    "ar": (("و",), ("أعتقد", "أظن"), ("ربما",), ("ليس", "لا", "أقل من", "أكثر من")),
    "hi": (("और", "तथा"), ("मुझे लगता है", "मेरे अनुसार"), ("शायद",), ("नहीं", "कम से कम")),
    "tr": (("ve",), ("bence", "sanırım"), ("belki", "muhtemelen"), ("değil", "en az", "en fazla")),
    "vi": (("và",), ("tôi nghĩ", "tôi nói"), ("có lẽ", "có thể là"), ("không", "ít nhất", "nhiều nhất")),
    "id": (("dan",), ("saya pikir", "menurut saya"), ("mungkin",), ("tidak", "bukan", "paling sedikit")),
    "pl": (
        ("i", "oraz"),
        ("myślę, że", "myślę że", "uważam, że", "mówię"),
        ("może", "chyba", "prawdopodobnie"),
        ("nie", "co najmniej", "co najwyżej"),
    ),
    "nl": (
        ("en",),
        ("ik denk", "ik zeg", "ik zou zeggen"),
        ("misschien", "mogelijk"),
        ("niet", "geen", "minstens"),
    ),
    "sv": (
        ("och",),
        ("jag tror", "jag säger", "jag tycker"),
        ("kanske", "möjligen"),
        ("inte", "minst", "högst"),
    ),
    "uk": (
        ("і", "та", "й"),
        ("я думаю", "я вважаю", "думаю"),
        ("можливо", "мабуть"),
        ("не", "менше", "більше"),
    ),
    "cs": (
        (),
        ("myslím, že", "myslím že", "řekl bych"),
        ("možná", "asi"),
        ("ne", "není", "nejméně", "nejvýše"),
    ),
    "fa": (("و",), ("فکر می‌کنم", "به نظرم"), ("شاید",), ("نه", "نیست", "کمتر از", "بیشتر از")),
    "th": (("และ",), ("ฉันคิดว่า", "ผมคิดว่า"), ("อาจจะ",), ("ไม่ใช่", "อย่างน้อย")),
}

# The negations above (and English "not") that stand right before the value they reject: "nicht 12",
# "pas 12", "不是12", "не 12". A closing sentence's rejected value is no candidate ("Es sind nicht 12,
# sondern 42." states 42); bounds ("mindestens 12", "至少 12") are not among them and still state nothing.
REJECTING = (
    "not", "nicht", "kein", "keine", "pas", "не", "não", "non", "niet", "geen", "inte", "nie", "ne",
    "není", "không", "bukan", "tidak", "no", "不是",
)  # fmt: skip
# The word that turns from a rejected value to the one stated: "not 52, but 53", "nicht 52, sondern 53",
# "pas 52 mais 53", "no 52, sino 53", "não 52, mas 53", "non 52, ma 53", "niet 52, maar 53", "не 52, а
# 53", "不是52，而是53"; a value after it is the answer after a cue as it is in a closing sentence.
CONTRASTING = (
    "but", "rather", "instead", "it is", "it's", "sondern", "mais", "sino", "mas", "ma", "maar", "utan",
    "men", "lecz", "ale", "а", "але", "nhưng", "tetapi", "melainkan", "而是", "是",
)  # fmt: skip
# "nor" of those languages: "pas 12 ni 42", "nicht 12 noch 42", "не 12 ни 42" reject both values.
NOR_WORDS = ("nor", "ni", "noch", "né", "nem", "ни", "ani", "ні", "也不")
