"""Twenty Codeforces problems as deepmind/code_contests records, each with four solutions to judge.

Source: the problems are real Codeforces problems (contest, index, name and rating as on
https://codeforces.com/problemset/problem/<contest>/<index>). The dataset's own records
(deepmind/code_contests, CC BY 4.0) could not be had offline on the project's machine, so these
records are rebuilt, not copied, and labelled as such:
- `description`: each statement is retold in this project's words (the task, the input and the
  output format), not Codeforces' text;
- `public_tests`: the problem's sample tests, as its statement shows them;
- `private_tests`: tests written here (edge cases and one largest-input test each), their
  expected outputs computed by a Python oracle below, independent of the C++ reference;
- limits: 1 s and 256 MB for every problem (most of these problems' own; not checked per problem
  offline).
The solutions are this project's own: a reference, a wrong answer (a classic slip: a 32-bit
overflow, a strict comparison for a non-strict one, a missed case), a compile error (the reference
using a name it never declares) and a time limit (a correct but naive algorithm the largest test
makes too slow). The largest tests are built here, seeded, so the fixture holds no large file.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

TIME_LIMIT = {"seconds": 1, "nanos": 0}  # deepmind/code_contests' {seconds, nanos}
MEMORY_LIMIT = 256 * 10**6


@dataclass(frozen=True)
class Problem:
    contest: int
    index: str
    title: str
    rating: int
    statement: str
    samples: tuple[tuple[str, str], ...]  # (input, output) as the statement shows them
    inputs: tuple[str, ...]  # the private tests' inputs; outputs come from `oracle`
    oracle: Callable[[str], str]
    reference: str
    wrong: str
    slow: str

    @property
    def name(self) -> str:
        """The dataset's naming: `<contest>_<index>. <title>`."""
        return f"{self.contest}_{self.index}. {self.title}"

    @property
    def compile_error(self) -> str:
        """The reference using a name it never declares."""
        assert "int main() {" in self.reference, self.name
        return self.reference.replace("int main() {", "int main() {\n    undeclared_total += 1;", 1)

    def variants(self) -> dict[str, str]:
        return {
            "reference": self.reference,
            "wrong_answer": self.wrong,
            "compile_error": self.compile_error,
            "time_limit": self.slow,
        }

    def record(self) -> dict[str, object]:
        """The problem as a deepmind/code_contests record (the fields the converter reads)."""
        return {
            "name": self.name,
            "description": self.statement,
            "cf_rating": self.rating,
            "cf_contest_id": self.contest,
            "cf_index": self.index,
            "source": 2,  # Codeforces in the dataset's source enum
            "time_limit": TIME_LIMIT,
            "memory_limit_bytes": MEMORY_LIMIT,
            "public_tests": {
                "input": [i for i, _ in self.samples],
                "output": [o for _, o in self.samples],
            },
            "private_tests": {
                "input": list(self.inputs),
                "output": [self.oracle(i) for i in self.inputs],
            },
            "generated_tests": {"input": [], "output": []},
        }


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split()]


def _cases(text: str, width: int) -> list[list[int]]:
    """A `t` then t cases of `width` integers each."""
    v = _ints(text)
    return [v[1 + i * width : 1 + (i + 1) * width] for i in range(v[0])]


def _lines(values: Sequence[object]) -> str:
    return "".join(f"{v}\n" for v in values)


def _t_input(cases: list[tuple[int, ...]]) -> str:
    return f"{len(cases)}\n" + "".join(" ".join(map(str, c)) + "\n" for c in cases)


def _rng(problem: str) -> random.Random:
    return random.Random(f"contest-fixture {problem}")


HEAD = "#include <bits/stdc++.h>\nusing namespace std;\n"


def _cpp(body: str) -> str:
    return HEAD + body.strip("\n") + "\n"


def _t_loop(per_case: str) -> str:
    """A program that reads `t` and runs `per_case` (C++ statements) for each case."""
    return _cpp(
        'int main() {\n    int t; scanf("%d", &t);\n    while (t--) {\n'
        + per_case.strip("\n")
        + "\n    }\n}"
    )


# 1A: tiles of a x a covering an n x m rectangle.
def _theatre(text: str) -> str:
    n, m, a = _ints(text)
    return f"{-(-n // a) * -(-m // a)}\n"


THEATRE = Problem(
    1,
    "A",
    "Theatre Square",
    1000,
    "A rectangular square of n by m metres is to be paved with square flagstones of side a. "
    "Flagstones may cover more than the square but may not be broken, and their sides are "
    "parallel to the square's. Find the least number of flagstones needed.\n\nInput: one line "
    "with n, m and a (1 <= n, m, a <= 10^9).\n\nOutput: the number of flagstones.",
    (("6 6 4\n", "4\n"),),
    (
        "6 6 4\n",
        "1 1 1\n",
        "2 1 1\n",
        "13 7 3\n",
        "1000000000 1000000000 999999999\n",
        "1000000000 1000000000 1\n",
    ),
    _theatre,
    _cpp("""
int main() {
    long long n, m, a; cin >> n >> m >> a;
    cout << ((n + a - 1) / a) * ((m + a - 1) / a) << "\\n";
}"""),
    _cpp("""
int main() {
    int n, m, a; cin >> n >> m >> a;
    cout << ((n + a - 1) / a) * ((m + a - 1) / a) << "\\n";
}"""),
    _cpp("""
int main() {
    long long n, m, a; cin >> n >> m >> a;
    volatile long long tiles = 0;
    for (long long i = 0; i < n; i += a)
        for (long long j = 0; j < m; j += a) tiles = tiles + 1;
    cout << tiles << "\\n";
}"""),
)


# 1328A: moves of +1 to a until b divides it.
def _divisibility(text: str) -> str:
    return _lines([(b - a % b) % b for a, b in _cases(text, 2)])


_r = _rng("1328A")
DIVISIBILITY = Problem(
    1328,
    "A",
    "Divisibility Problem",
    800,
    "You are given a and b. In one move you may increase a by 1. Find the least number of "
    "moves after which a is divisible by b.\n\nInput: t (1 <= t <= 10^4), then t lines of a "
    "and b (1 <= a, b <= 10^9).\n\nOutput: the answer for each case on its own line.",
    (("5\n10 4\n13 9\n100 13\n123 456\n92 46\n", "2\n5\n4\n333\n0\n"),),
    (
        "5\n10 4\n13 9\n100 13\n123 456\n92 46\n",
        "3\n1 1\n7 7\n1 1000000000\n",
        _t_input([(_r.randint(1, 10**6), _r.randint(10**9 - 10**6, 10**9)) for _ in range(10**4)]),
    ),
    _divisibility,
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n'
        '        printf("%lld\\n", (b - a % b) % b);'
    ),
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n        printf("%lld\\n", b - a % b);'
    ),
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n'
        "        volatile long long x = a; long long moves = 0;\n"
        "        while (x % b) { x = x + 1; moves++; }\n"
        '        printf("%lld\\n", moves);'
    ),
)


# 1409A: moves of +-k (1 <= k <= 10) from a to b.
def _two_integers(text: str) -> str:
    return _lines([-(-abs(a - b) // 10) for a, b in _cases(text, 2)])


_r = _rng("1409A")
TWO_INTEGERS = Problem(
    1409,
    "A",
    "Yet Another Two Integers Problem",
    800,
    "You are given a and b. In one move you choose k from 1 to 10 and add it to a or subtract "
    "it from a. Find the least number of moves that turn a into b.\n\nInput: t (1 <= t <= "
    "2*10^4), then t lines of a and b (1 <= a, b <= 10^9).\n\nOutput: the answer for each case.",
    (
        (
            "6\n5 5\n13 42\n18 4\n1337 420\n123456789 1000000000\n100500 9000\n",
            "0\n3\n2\n92\n87654322\n9150\n",
        ),
    ),
    (
        "6\n5 5\n13 42\n18 4\n1337 420\n123456789 1000000000\n100500 9000\n",
        "4\n1 11\n1 12\n20 1\n1000000000 1\n",
        _t_input([(_r.randint(1, 1000), _r.randint(9 * 10**8, 10**9)) for _ in range(2 * 10**4)]),
    ),
    _two_integers,
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n'
        '        printf("%lld\\n", (llabs(a - b) + 9) / 10);'
    ),
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n'
        '        printf("%lld\\n", llabs(a - b) / 10);'
    ),
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n'
        "        volatile long long gap = llabs(a - b); long long moves = 0;\n"
        "        while (gap > 0) { gap = gap - min(10LL, (long long)gap); moves++; }\n"
        '        printf("%lld\\n", moves);'
    ),
)


# 1520B: numbers from 1 to n whose digits are all the same.
def _ordinary(text: str) -> str:
    out = []
    for (n,) in _cases(text, 1):
        out.append(sum(1 for d in range(1, 10) for k in range(1, 11) if int(str(d) * k) <= n))
    return _lines(out)


_r = _rng("1520B")
ORDINARY = Problem(
    1520,
    "B",
    "Ordinary Numbers",
    800,
    "A positive integer is ordinary when all its decimal digits are the same (1, 2, 99, 777 "
    "are; 719, 2021 are not). Count the ordinary numbers from 1 to n.\n\nInput: t (1 <= t <= "
    "10^4), then t lines of n (1 <= n <= 10^9).\n\nOutput: the count for each case.",
    (("6\n1\n2\n3\n4\n5\n100\n", "1\n2\n3\n4\n5\n18\n"),),
    (
        "6\n1\n2\n3\n4\n5\n100\n",
        "5\n9\n10\n11\n999999999\n1000000000\n",
        _t_input([(_r.randint(9 * 10**8, 10**9),) for _ in range(10**4)]),
    ),
    _ordinary,
    _t_loop(
        '        long long n; scanf("%lld", &n); int count = 0;\n'
        "        for (int d = 1; d <= 9; d++)\n"
        "            for (long long x = d; x <= n; x = x * 10 + d) count++;\n"
        '        printf("%d\\n", count);'
    ),
    _t_loop(
        '        long long n; scanf("%lld", &n); int count = 0;\n'
        "        for (int d = 1; d <= 9; d++)\n"
        "            for (long long x = d; x < n; x = x * 10 + d) count++;\n"
        '        printf("%d\\n", count);'
    ),
    _t_loop(
        '        long long n; scanf("%lld", &n); volatile int count = 0;\n'
        "        for (long long x = 1; x <= n; x++) {\n"
        "            string s = to_string(x);\n"
        "            if (s == string(s.size(), s[0])) count = count + 1;\n"
        "        }\n"
        '        printf("%d\\n", (int)count);'
    ),
)


# 1374A: the largest k <= n with k mod x = y.
def _remainder(text: str) -> str:
    return _lines([n - (n - y) % x for x, y, n in _cases(text, 3)])


_r = _rng("1374A")
REMAINDER = Problem(
    1374,
    "A",
    "Required Remainder",
    800,
    "Given x, y and n, find the largest k with 0 <= k <= n and k mod x = y. Such a k always "
    "exists.\n\nInput: t (1 <= t <= 5*10^4), then t lines of x, y, n (2 <= x <= 10^9, "
    "0 <= y < x, y <= n <= 10^9).\n\nOutput: k for each case.",
    (
        (
            "7\n7 5 12345\n5 0 4\n10 5 15\n17 8 54321\n499999993 9 1000000000\n10 5 187\n"
            "2 0 999999999\n",
            "12339\n0\n15\n54306\n999999995\n185\n999999998\n",
        ),
    ),
    (
        "7\n7 5 12345\n5 0 4\n10 5 15\n17 8 54321\n499999993 9 1000000000\n10 5 187\n"
        "2 0 999999999\n",
        "3\n2 1 1\n1000000000 999999999 999999999\n3 0 1000000000\n",
        _t_input([(10**9, 0, 10**9 - 1 - _r.randint(0, 1000)) for _ in range(5 * 10**4)]),
    ),
    _remainder,
    _t_loop(
        '        long long x, y, n; scanf("%lld %lld %lld", &x, &y, &n);\n'
        '        printf("%lld\\n", n - (n - y) % x);'
    ),
    _t_loop(
        '        long long x, y, n; scanf("%lld %lld %lld", &x, &y, &n);\n'
        '        printf("%lld\\n", n - n % x + y);'
    ),
    _t_loop(
        '        long long x, y, n; scanf("%lld %lld %lld", &x, &y, &n);\n'
        "        volatile long long k = n;\n"
        "        while (k % x != y) k = k - 1;\n"
        '        printf("%lld\\n", (long long)k);'
    ),
)


# 1371A: sticks of lengths 1..n joined into the most sticks of one length.
def _sticks(text: str) -> str:
    return _lines([(n + 1) // 2 for (n,) in _cases(text, 1)])


_r = _rng("1371A")
STICKS = Problem(
    1371,
    "A",
    "Magical Sticks",
    800,
    "There is one stick of each length from 1 to n. Two sticks may be joined into one whose "
    "length is their sum, as often as you like. Find the most sticks of one and the same "
    "length you can have (other sticks may remain).\n\nInput: t (1 <= t <= 1000), then t lines "
    "of n (1 <= n <= 10^9).\n\nOutput: the answer for each case.",
    (("4\n1\n2\n3\n4\n", "1\n1\n2\n2\n"),),
    (
        "4\n1\n2\n3\n4\n",
        "3\n5\n1000000000\n999999999\n",
        _t_input([(_r.randint(9 * 10**8, 10**9),) for _ in range(1000)]),
    ),
    _sticks,
    _t_loop('        long long n; scanf("%lld", &n); printf("%lld\\n", (n + 1) / 2);'),
    _t_loop('        long long n; scanf("%lld", &n); printf("%lld\\n", n / 2);'),
    _t_loop(
        '        long long n; scanf("%lld", &n); volatile long long pairs = 0;\n'
        "        for (long long i = 1; i <= n; i += 2) pairs = pairs + 1;\n"
        '        printf("%lld\\n", (long long)pairs);'
    ),
)


# 1366A: tools from a sticks and b diamonds (2+1 or 1+2).
def _shovels(text: str) -> str:
    return _lines([min(a, b, (a + b) // 3) for a, b in _cases(text, 2)])


_r = _rng("1366A")
SHOVELS = Problem(
    1366,
    "A",
    "Shovels and Swords",
    1100,
    "A shovel takes two sticks and one diamond, a sword two diamonds and one stick; each tool "
    "sells for one emerald. With a sticks and b diamonds, find the most emeralds you can "
    "earn.\n\nInput: t (1 <= t <= 1000), then t lines of a and b (0 <= a, b <= 10^9).\n\n"
    "Output: the answer for each case.",
    (("4\n4 4\n1000000000 0\n7 15\n8 7\n", "2\n0\n7\n5\n"),),
    (
        "4\n4 4\n1000000000 0\n7 15\n8 7\n",
        "4\n0 0\n1 1\n1 2\n10 1\n",
        _t_input(
            [(_r.randint(9 * 10**8, 10**9), _r.randint(9 * 10**8, 10**9)) for _ in range(1000)]
        ),
    ),
    _shovels,
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n'
        '        printf("%lld\\n", min({a, b, (a + b) / 3}));'
    ),
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n'
        '        printf("%lld\\n", (a + b) / 3);'
    ),
    _t_loop(
        '        long long a, b; scanf("%lld %lld", &a, &b);\n'
        "        volatile long long tools = 0;\n"
        "        while (true) {\n"
        "            if (a >= b && a >= 2 && b >= 1) { a -= 2; b -= 1; }\n"
        "            else if (b >= 2 && a >= 1) { b -= 2; a -= 1; }\n"
        "            else break;\n"
        "            tools = tools + 1;\n"
        "        }\n"
        '        printf("%lld\\n", (long long)tools);'
    ),
)


# 1327A: n as a sum of k distinct positive odd integers.
def _odd_sum(text: str) -> str:
    return _lines(["YES" if k * k <= n and (n - k) % 2 == 0 else "NO" for n, k in _cases(text, 2)])


_r = _rng("1327A")
ODD_SUM = Problem(
    1327,
    "A",
    "Sum of Odd Integers",
    1100,
    "Can n be written as the sum of k distinct positive odd integers?\n\nInput: t (1 <= t <= "
    "10^5), then t lines of n and k (1 <= n, k <= 10^7).\n\nOutput: YES or NO for each case.",
    (("6\n3 1\n4 2\n10 3\n10 2\n16 4\n16 5\n", "YES\nYES\nNO\nYES\nYES\nNO\n"),),
    (
        "6\n3 1\n4 2\n10 3\n10 2\n16 4\n16 5\n",
        "4\n4 4\n10000000 10000000\n9 3\n1 1\n",
        _t_input([(10**7 - _r.randint(0, 1), _r.randint(3000, 3162)) for _ in range(10**5)]),
    ),
    _odd_sum,
    _t_loop(
        '        long long n, k; scanf("%lld %lld", &n, &k);\n'
        '        puts(k * k <= n && (n - k) % 2 == 0 ? "YES" : "NO");'
    ),
    _t_loop(
        '        long long n, k; scanf("%lld %lld", &n, &k);\n'
        '        puts((n - k) % 2 == 0 ? "YES" : "NO");'
    ),
    _t_loop(
        '        long long n, k; scanf("%lld %lld", &n, &k);\n'
        "        volatile long long least = 0;\n"
        "        for (long long i = 0; i < k; i++)\n"
        "            for (long long j = 0; j < 2 * i + 1; j++) least = least + 1;\n"
        '        puts(least <= n && (n - k) % 2 == 0 ? "YES" : "NO");'
    ),
)


# 1475A: does n have an odd divisor above 1?
def _odd_divisor(text: str) -> str:
    return _lines(["NO" if n & (n - 1) == 0 else "YES" for (n,) in _cases(text, 1)])


ODD_DIVISOR = Problem(
    1475,
    "A",
    "Odd Divisor",
    900,
    "Does n have an odd divisor greater than one?\n\nInput: t (1 <= t <= 10^4), then t lines "
    "of n (2 <= n <= 10^14).\n\nOutput: YES or NO for each case.",
    (("6\n2\n3\n4\n5\n998244353\n1099511627776\n", "NO\nYES\nNO\nYES\nYES\nNO\n"),),
    (
        "6\n2\n3\n4\n5\n998244353\n1099511627776\n",
        "3\n6\n12\n96\n",
        _t_input([(2**46,), (2**45,), (2**44,)]),
    ),
    _odd_divisor,
    _t_loop('        long long n; scanf("%lld", &n);\n        puts(n & (n - 1) ? "YES" : "NO");'),
    _t_loop('        long long n; scanf("%lld", &n);\n        puts(n % 2 ? "YES" : "NO");'),
    _t_loop(
        '        long long n; scanf("%lld", &n); bool found = false;\n'
        "        for (long long d = 3; d <= n && !found; d += 2) if (n % d == 0) found = true;\n"
        '        puts(found ? "YES" : "NO");'
    ),
)


# 1342A: cost of bringing x and y to zero with single (a) and double (b) steps.
def _road(text: str) -> str:
    v = _ints(text)
    out = []
    for i in range(v[0]):
        x, y, a, b = v[1 + 4 * i : 5 + 4 * i]
        out.append(min(a * (x + y), b * min(x, y) + a * abs(x - y)))
    return _lines(out)


_r = _rng("1342A")
ROAD = Problem(
    1342,
    "A",
    "Road To Zero",
    1000,
    "Two integers x and y are to be made both zero. Changing one of them by 1 costs a dollars; "
    "changing both by 1 in the same direction costs b dollars. Find the least cost.\n\n"
    "Input: t (1 <= t <= 100), then per case a line of x and y (0 <= x, y <= 10^9) and a line "
    "of a and b (1 <= a, b <= 10^9).\n\nOutput: the least cost for each case.",
    (("2\n1 3\n391 555\n0 0\n9 4\n", "1337\n0\n"),),
    (
        "2\n1 3\n391 555\n0 0\n9 4\n",
        "2\n5 5\n1 100\n1000000000 1000000000\n1000000000 1\n",
        "100\n"
        + "".join(
            f"{_r.randint(9 * 10**8, 10**9)} {_r.randint(9 * 10**8, 10**9)}\n"
            f"{_r.randint(1, 10**9)} {_r.randint(1, 10**9)}\n"
            for _ in range(100)
        ),
    ),
    _road,
    _t_loop(
        '        long long x, y, a, b; scanf("%lld %lld %lld %lld", &x, &y, &a, &b);\n'
        '        printf("%lld\\n", min(a * (x + y), b * min(x, y) + a * llabs(x - y)));'
    ),
    _t_loop(
        '        long long x, y, a, b; scanf("%lld %lld %lld %lld", &x, &y, &a, &b);\n'
        '        printf("%lld\\n", b * min(x, y) + a * llabs(x - y));'
    ),
    _t_loop(
        '        long long x, y, a, b; scanf("%lld %lld %lld %lld", &x, &y, &a, &b);\n'
        "        long long best = LLONG_MAX;\n"
        "        for (volatile long long both = 0; both <= min(x, y); both = both + 1)\n"
        "            best = min(best, b * both + a * (x + y - 2 * both));\n"
        '        printf("%lld\\n", best);'
    ),
)


# 1335A: ways to split n candies into a > b > 0.
def _candies(text: str) -> str:
    return _lines([(n - 1) // 2 for (n,) in _cases(text, 1)])


_r = _rng("1335A")
CANDIES = Problem(
    1335,
    "A",
    "Candies and Two Sisters",
    800,
    "n candies are split between two sisters: a for the elder and b for the younger, a > 0, "
    "b > 0, a > b, a + b = n. Count the ways.\n\nInput: t (1 <= t <= 10^4), then t lines of n "
    "(1 <= n <= 2*10^9).\n\nOutput: the count for each case.",
    (("6\n7\n1\n2\n3\n2000000000\n763243547\n", "3\n0\n0\n1\n999999999\n381621773\n"),),
    (
        "6\n7\n1\n2\n3\n2000000000\n763243547\n",
        "3\n4\n6\n1999999999\n",
        _t_input([(_r.randint(19 * 10**8, 2 * 10**9),) for _ in range(10**4)]),
    ),
    _candies,
    _t_loop('        long long n; scanf("%lld", &n); printf("%lld\\n", (n - 1) / 2);'),
    _t_loop('        long long n; scanf("%lld", &n); printf("%lld\\n", n / 2);'),
    _t_loop(
        '        long long n; scanf("%lld", &n); volatile long long ways = 0;\n'
        "        for (long long b = 1; b < n - b; b++) ways = ways + 1;\n"
        '        printf("%lld\\n", (long long)ways);'
    ),
)


def _runs(values: list[int], strict: bool) -> int:
    best = run = 1
    for prev, cur in zip(values, values[1:], strict=False):
        run = run + 1 if (cur > prev if strict else cur >= prev) else 1
        best = max(best, run)
    return best


def _array_input(values: list[int]) -> str:
    return f"{len(values)}\n" + " ".join(map(str, values)) + "\n"


_RUN_REFERENCE = """
int main() {
    int n; scanf("%d", &n); vector<long long> a(n);
    for (auto& v : a) scanf("%lld", &v);
    int best = 1, run = 1;
    for (int i = 1; i < n; i++) { run = a[i] CMP a[i - 1] ? run + 1 : 1; best = max(best, run); }
    printf("%d\\n", best);
}"""
_RUN_SLOW = """
int main() {
    int n; scanf("%d", &n); vector<long long> a(n);
    for (auto& v : a) scanf("%lld", &v);
    volatile int best = 1;
    for (int i = 0; i < n; i++) {
        int j = i + 1;
        while (j < n && a[j] CMP a[j - 1]) j++;
        if (j - i > best) best = j - i;
    }
    printf("%d\\n", (int)best);
}"""

_r = _rng("702A")
MAX_INCREASE = Problem(
    702,
    "A",
    "Maximum Increase",
    800,
    "Find the length of the longest run of consecutive elements of an array that is strictly "
    "increasing.\n\nInput: n (1 <= n <= 10^5), then n integers (1 <= a_i <= 10^9).\n\n"
    "Output: the length.",
    (("5\n1 7 2 11 15\n", "3\n"), ("6\n100 100 100 100 100 100\n", "1\n"), ("3\n1 2 3\n", "3\n")),
    (
        "5\n1 7 2 11 15\n",
        "6\n100 100 100 100 100 100\n",
        "3\n1 2 3\n",
        "1\n5\n",
        _array_input([3, 3, 4, 4, 5, 6]),
        _array_input(list(range(1, 10**5 + 1))),
    ),
    lambda text: f"{_runs(_ints(text)[1:], strict=True)}\n",
    _cpp(_RUN_REFERENCE.replace("CMP", ">")),
    _cpp(_RUN_REFERENCE.replace("CMP", ">=")),
    _cpp(_RUN_SLOW.replace("CMP", ">")),
)

_r = _rng("580A")
KEFA = Problem(
    580,
    "A",
    "Kefa and First Steps",
    900,
    "Kefa earned a_i on day i. Find the length of the longest run of consecutive days whose "
    "earnings never decrease.\n\nInput: n (1 <= n <= 10^5), then n integers (1 <= a_i <= "
    "10^9).\n\nOutput: the length.",
    (("6\n2 2 1 3 4 1\n", "3\n"), ("3\n2 2 9\n", "3\n")),
    (
        "6\n2 2 1 3 4 1\n",
        "3\n2 2 9\n",
        "1\n7\n",
        _array_input([5, 4, 3, 2, 1]),
        _array_input([7] * 10**5),
    ),
    lambda text: f"{_runs(_ints(text)[1:], strict=False)}\n",
    _cpp(_RUN_REFERENCE.replace("CMP", ">=")),
    _cpp(_RUN_REFERENCE.replace("CMP", ">")),
    _cpp(_RUN_SLOW.replace("CMP", ">=")),
)


# 230B: is x the square of a prime (exactly three divisors)?
def _t_prime(x: int) -> bool:
    r = int(x**0.5)
    while r * r > x:
        r -= 1
    while (r + 1) ** 2 <= x:
        r += 1
    return r * r == x and r > 1 and all(r % d for d in range(2, int(r**0.5) + 1))


_r = _rng("230B")
T_PRIMES = Problem(
    230,
    "B",
    "T-primes",
    1300,
    "A positive integer is a T-prime when it has exactly three positive divisors. For each of n "
    "numbers, say whether it is a T-prime.\n\nInput: n (1 <= n <= 10^5), then n integers "
    "(1 <= x_i <= 10^12).\n\nOutput: YES or NO for each number, one per line.",
    (("3\n4 5 6\n", "YES\nNO\nNO\n"),),
    (
        "3\n4 5 6\n",
        _array_input([1, 9, 16, 25, 49, 121, 999966000289, 10**12, 999950884]),
        _array_input([_r.randint(10**12 - 10**9, 10**12) for _ in range(20000)]),
    ),
    lambda text: _lines(["YES" if _t_prime(x) else "NO" for x in _ints(text)[1:]]),
    _cpp("""
int main() {
    const int L = 1000001; vector<bool> composite(L, false); composite[0] = composite[1] = true;
    for (long long i = 2; i < L; i++)
        if (!composite[i]) for (long long j = i * i; j < L; j += i) composite[j] = true;
    int n; scanf("%d", &n);
    while (n--) {
        long long x; scanf("%lld", &x);
        long long r = sqrtl((long double)x);
        while (r * r > x) r--;
        while ((r + 1) * (r + 1) <= x) r++;
        puts(r * r == x && !composite[r] ? "YES" : "NO");
    }
}"""),
    _cpp("""
int main() {
    int n; scanf("%d", &n);
    while (n--) {
        long long x; scanf("%lld", &x);
        long long r = sqrtl((long double)x);
        while (r * r > x) r--;
        while ((r + 1) * (r + 1) <= x) r++;
        puts(r * r == x && r > 1 ? "YES" : "NO");
    }
}"""),
    _cpp("""
int main() {
    int n; scanf("%d", &n);
    while (n--) {
        long long x; scanf("%lld", &x); volatile int divisors = 0;
        for (long long d = 1; d * d <= x; d++)
            if (x % d == 0) divisors = divisors + (d * d == x ? 1 : 2);
        puts(divisors == 3 ? "YES" : "NO");
    }
}"""),
)


# 318A: the k-th number when 1..n is written odd numbers first, then even ones.
def _even_odds(text: str) -> str:
    n, k = _ints(text)
    odd = (n + 1) // 2
    return f"{2 * k - 1 if k <= odd else 2 * (k - odd)}\n"


EVEN_ODDS = Problem(
    318,
    "A",
    "Even Odds",
    900,
    "The numbers 1 to n are rearranged: first every odd one in increasing order, then every even "
    "one in increasing order. Which number stands at position k?\n\nInput: n and k "
    "(1 <= k <= n <= 10^12).\n\nOutput: the number at position k.",
    (("10 3\n", "5\n"), ("7 7\n", "6\n")),
    (
        "10 3\n",
        "7 7\n",
        "1 1\n",
        "2 2\n",
        "1000000000000 500000000001\n",
        "999999999999 999999999999\n",
    ),
    _even_odds,
    _cpp("""
int main() {
    long long n, k; cin >> n >> k; long long odd = (n + 1) / 2;
    cout << (k <= odd ? 2 * k - 1 : 2 * (k - odd)) << "\\n";
}"""),
    _cpp("""
int main() {
    long long n, k; cin >> n >> k; long long odd = n / 2;
    cout << (k <= odd ? 2 * k - 1 : 2 * (k - odd)) << "\\n";
}"""),
    _cpp("""
int main() {
    long long n, k; cin >> n >> k; volatile long long position = 0, value = -1;
    for (long long v = 1; v <= n && position < k; v += 2) { position = position + 1; value = v; }
    for (long long v = 2; v <= n && position < k; v += 2) { position = position + 1; value = v; }
    cout << value << "\\n";
}"""),
)


# 1370A: the largest gcd of two distinct numbers from 1..n.
def _max_gcd(text: str) -> str:
    return _lines([n // 2 for (n,) in _cases(text, 1)])


MAX_GCD = Problem(
    1370,
    "A",
    "Maximum GCD",
    800,
    "Among all pairs of distinct integers a, b with 1 <= a < b <= n, find the largest gcd(a, b)."
    "\n\nInput: t (1 <= t <= 100), then t lines of n (2 <= n <= 10^6).\n\nOutput: the answer "
    "for each case.",
    (("2\n3\n5\n", "1\n2\n"),),
    ("2\n3\n5\n", "3\n2\n4\n999999\n", _t_input([(10**6,), (999999,)])),
    _max_gcd,
    _t_loop('        int n; scanf("%d", &n); printf("%d\\n", n / 2);'),
    _t_loop('        int n; scanf("%d", &n); printf("%d\\n", (n + 1) / 2);'),
    _t_loop(
        '        int n; scanf("%d", &n); volatile int best = 1;\n'
        "        for (int a = 1; a <= n; a++)\n"
        "            for (int b = a + 1; b <= n; b++) if (__gcd(a, b) > best) best = __gcd(a, b);\n"
        '        printf("%d\\n", (int)best);'
    ),
)


# 1358A: lanterns on streets lighting every square of an n x m park.
def _park(text: str) -> str:
    return _lines([(n * m + 1) // 2 for n, m in _cases(text, 2)])


_r = _rng("1358A")
PARK = Problem(
    1358,
    "A",
    "Park Lighting",
    800,
    "A park is an n by m grid of unit squares; a lantern placed in the middle of a street "
    "(a cell side) lights the one or two squares beside it. Find the fewest lanterns that light "
    "every square.\n\nInput: t (1 <= t <= 10^4), then t lines of n and m (1 <= n, m <= 10^4)."
    "\n\nOutput: the answer for each case.",
    (("5\n1 1\n1 3\n2 2\n3 3\n5 3\n", "1\n2\n2\n5\n8\n"),),
    (
        "5\n1 1\n1 3\n2 2\n3 3\n5 3\n",
        "3\n10000 10000\n9999 9999\n1 10000\n",
        _t_input([(_r.randint(9000, 10**4), _r.randint(9000, 10**4)) for _ in range(10**4)]),
    ),
    _park,
    _t_loop(
        '        long long n, m; scanf("%lld %lld", &n, &m); printf("%lld\\n", (n * m + 1) / 2);'
    ),
    _t_loop('        long long n, m; scanf("%lld %lld", &n, &m); printf("%lld\\n", n * m / 2);'),
    _t_loop(
        '        long long n, m; scanf("%lld %lld", &n, &m); volatile long long lit = 0;\n'
        "        long long lanterns = 0;\n"
        "        for (long long i = 0; i < n; i++)\n"
        "            for (long long j = 0; j < m; j++) { lit = lit + 1; if (lit % 2) lanterns++; }\n"
        '        printf("%lld\\n", lanterns);'
    ),
)


# 1475B: n as a sum of some 2020s and some 2021s.
def _new_year(text: str) -> str:
    return _lines(["YES" if n % 2020 <= n // 2020 else "NO" for (n,) in _cases(text, 1)])


_r = _rng("1475B")
NEW_YEAR = Problem(
    1475,
    "B",
    "New Year's Number",
    900,
    "Can n be written as a sum of some number of 2020s and some number of 2021s?\n\nInput: t "
    "(1 <= t <= 10^4), then t lines of n (1 <= n <= 10^6).\n\nOutput: YES or NO for each case.",
    (("5\n1\n4041\n4042\n8081\n8079\n", "NO\nYES\nYES\nYES\nNO\n"),),
    (
        "5\n1\n4041\n4042\n8081\n8079\n",
        "4\n2020\n2021\n4040\n1000000\n",
        _t_input([(_r.randint(9 * 10**5, 10**6),) for _ in range(10**4)]),
    ),
    _new_year,
    _t_loop('        int n; scanf("%d", &n); puts(n % 2020 <= n / 2020 ? "YES" : "NO");'),
    _t_loop('        int n; scanf("%d", &n); puts(n % 2020 < n / 2020 ? "YES" : "NO");'),
    _t_loop(
        '        int n; scanf("%d", &n); volatile bool ok = false;\n'
        "        for (long long a = 0; a <= n; a++)\n"
        "            for (long long b = 0; b <= n; b++) if (2020 * a + 2021 * b == n) ok = true;\n"
        '        puts(ok ? "YES" : "NO");'
    ),
)


# 1401A: least moves of point A so that some B has | |B| - |A - B| | = k.
def _distance(text: str) -> str:
    return _lines([k - n if k > n else (n - k) % 2 for n, k in _cases(text, 2)])


DISTANCE = Problem(
    1401,
    "A",
    "Distance and Axis",
    900,
    "Point A is at x = n on a line. Moving A by one costs one step. Find the fewest steps after "
    "which some integer point B satisfies | |B - 0| - |A - B| | = k.\n\nInput: t (1 <= t <= "
    "6000), then t lines of n and k (0 <= n, k <= 10^6).\n\nOutput: the answer for each case.",
    (("6\n4 0\n5 8\n0 1000000\n0 0\n1 0\n1000000 1000000\n", "0\n3\n1000000\n0\n1\n0\n"),),
    (
        "6\n4 0\n5 8\n0 1000000\n0 0\n1 0\n1000000 1000000\n",
        "3\n7 2\n2 7\n1000000 1\n",
        _t_input([(10**6, 10**6 - 1)] * 6000),
    ),
    _distance,
    _t_loop(
        '        long long n, k; scanf("%lld %lld", &n, &k);\n'
        '        printf("%lld\\n", k > n ? k - n : (n - k) % 2);'
    ),
    _t_loop(
        '        long long n, k; scanf("%lld %lld", &n, &k);\n'
        '        printf("%lld\\n", llabs(n - k) % 2);'
    ),
    _t_loop(
        '        long long n, k; scanf("%lld %lld", &n, &k); long long steps = -1;\n'
        "        for (long long a = n; steps < 0; a++)\n"
        "            for (volatile long long b = 0; b <= a; b = b + 1)\n"
        "                if (llabs(b - (a - b)) == k) { steps = a - n; break; }\n"
        '        printf("%lld\\n", steps);'
    ),
)


# 1296B: burles spent when every 10 spent returns 1 as cashback.
def _food(text: str) -> str:
    return _lines([s + (s - 1) // 9 for (s,) in _cases(text, 1)])


_r = _rng("1296B")
FOOD = Problem(
    1296,
    "B",
    "Food Buying",
    900,
    "Mishka has s burles. Spending x burles (1 <= x <= what he has) returns floor(x / 10) "
    "burles to him. Find the most burles he can spend in all.\n\nInput: t (1 <= t <= 10^4), "
    "then t lines of s (1 <= s <= 10^9).\n\nOutput: the answer for each case.",
    (("6\n1\n10\n19\n9876\n12345\n1000000000\n", "1\n11\n21\n10973\n13716\n1111111111\n"),),
    (
        "6\n1\n10\n19\n9876\n12345\n1000000000\n",
        "4\n9\n18\n81\n999999999\n",
        _t_input([(_r.randint(9 * 10**8, 10**9),) for _ in range(10**4)]),
    ),
    _food,
    _t_loop('        long long s; scanf("%lld", &s); printf("%lld\\n", s + (s - 1) / 9);'),
    _t_loop('        long long s; scanf("%lld", &s); printf("%lld\\n", s + s / 9);'),
    _t_loop(
        '        long long s; scanf("%lld", &s); volatile long long left = s;\n'
        "        long long spent = 0;\n"
        "        while (left >= 10) { left = left - 10 + 1; spent += 10; }\n"
        '        printf("%lld\\n", spent + left);'
    ),
)

PROBLEMS: tuple[Problem, ...] = (
    THEATRE, DIVISIBILITY, TWO_INTEGERS, ORDINARY, REMAINDER, STICKS, SHOVELS, ODD_SUM,
    ODD_DIVISOR, ROAD, CANDIES, MAX_INCREASE, KEFA, T_PRIMES, EVEN_ODDS, MAX_GCD, PARK,
    NEW_YEAR, DISTANCE, FOOD,
)  # fmt: skip
VARIANTS = ("reference", "wrong_answer", "compile_error", "time_limit")
