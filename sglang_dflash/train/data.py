"""Training data: prompts that are disjoint from the evaluation sets, answered by the target itself.

Prompt sources (no download, no evaluation data):

- ``stdlib-functions``: "complete this function" prompts built from the signatures and docstrings
  of public functions in pure-Python standard-library modules (the code-completion shape).
- ``coding-tasks``: "write a Python function that ..." built from a grid of operations and data.
- ``math-word-problems``: arithmetic word problems from templates with random names and numbers.
- ``concepts``: explanations of Python language topics (``pydoc_data.topics``) and stdlib modules.

Opt-in sources shaped like the evaluation sets' prompts (a bare prompt, no instruction around it),
added when the default mix was exhausted (``--sources``; the default mix is unchanged, so stores
written with it stay resumable):

- ``code-completions``: a bare function header + docstring to continue, HumanEval's shape: stdlib
  functions and methods with their full docstrings, and small tasks whose ``>>>`` examples are
  computed by running a reference implementation.
- ``word-problems``: multi-step arithmetic stories with no instruction appended, GSM8K's shape.

A second evaluation-shaped pair, for variety once the first was learned (the drafter accepted 1.45
drafts per block on its training mix against 0.95 / 0.75 on HumanEval's / GSM8K's responses):

- ``package-completions``: bare headers of documented functions of installed third-party packages
  (networkx algorithms and generators, sympy's number theory and iterables), with their summary and
  ``>>>`` examples, HumanEval's shape on other code than the standard library's.
- ``story-problems``: GSM8K-shaped stories from 44 further templates (rates, percentages, ratios,
  change, averages, areas, schedules, wages), with their own names and numbers.

A third, once those were learned too:

- ``library-completions``: the same shape from numpy's, scipy's and pandas' documented public
  functions (their summaries and ``>>>`` examples: array and statistics code).
- ``chain-problems``: longer GSM8K-shaped stories from 40 further templates, three to five
  sentences whose quantities feed each other (unit conversions, fractions of what is left).

And a fourth story source:

- ``compare-problems``: GSM8K-shaped comparisons from 40 further templates: two or three people,
  shops or plans measured on the same quantities, the question asking for a difference, a ratio
  or which one wins and by how much.

And a fourth code source:

- ``composed-functions``: HumanEval-shaped tasks composed from parts: a filter, a per-item change
  and a summary over a list of numbers or words (``sum_squared_even``: "Return the sum of the
  squares of the even numbers in the list"), every combination once (895 tasks), with ``>>>``
  examples computed by running the composed implementation.

And a fifth story source:

- ``remainder-problems``: GSM8K-shaped stories from 40 further templates where something is
  split, packed, shared or paid for and something is left over (remainders and whole containers,
  change from a bill, times that roll past the hour).

And a fifth code source:

- ``threshold-functions``: the composed tasks' changes and summaries over the numbers of a list
  that relate to a second argument ``k`` (greater than, at most, divisible by, within ``k`` of
  zero, ...): ``sum_squared_above_k(numbers, k)``, every combination once (576 tasks), examples
  computed by running the implementation.

And a sixth story source:

- ``growth-problems``: GSM8K-shaped stories from 40 further templates where a quantity grows,
  shrinks or repeats over days, weeks or rounds (a fixed amount added each time, doubling, a
  percent up or down, two quantities growing at different rates).

And a sixth code source:

- ``text-functions``: the composed tasks' shape over the characters of a string: a character
  filter (vowels, digits, uppercase letters, ...), a per-character change and a summary
  (``joined_upper_vowels(text)``: "Return the vowels in the text, in upper case, joined into one
  string in their original order"), every combination once (495 tasks), examples computed by
  running the implementation.

And a seventh story source:

- ``shopping-problems``: GSM8K-shaped stories from 40 further templates of buying and selling:
  several items at their own prices, discounts and coupons, tax and tips, bulk deals, a bill
  split between friends, a seller's cost, price and profit.

Later story sources (``rate-problems``, ``measure-problems``, ``schedule-problems``) follow the
same pattern (docs/training.md lists them all), and a seventh code source:

- ``position-functions``: the composed tasks' changes and summaries over the numbers a list keeps
  by where they stand: even or odd index, greater or less than the number before, peaks, records,
  the first half (``sum_squared_even_index(numbers)``), every combination once (576 tasks).

And an eighth and a ninth code source:

- ``digit-functions``: the composed tasks' shape over the decimal digits of ``n: int``: a digit
  filter (even, odd, prime, greater than 4, ...), a per-digit change and a summary
  (``product_squared_odd_digits(n)``), every combination once (497 tasks).
- ``pair-functions``: the composed tasks' shape over two lists read side by side: a
  filter over the pairs ``(a[i], b[i])`` (``a[i] > b[i]``, both even or both odd, ...), a change
  that makes one number of each pair (sum, difference, product, larger, ...) and a summary
  (``sum_products_first_larger(a, b)``), every combination once (378 tasks).

And a tenth and an eleventh code source:

- ``mapping-functions``: the composed tasks' shape over a dictionary, ``scores: Dict[str, int]``
  (each student's name to a score): a filter over its entries (passing, even score, short name,
  ...), a change that makes a number (the score, twice it, the name's length, ...) or a name (as
  is, in upper case, its first letter) of each entry and a summary (``sum_scores_passing(scores)``),
  every combination once (469 tasks).
- ``sentence-functions``: the composed tasks' shape over the words of ``sentence: str`` (words
  separated by single spaces): a word filter (capitalized, plural, long, with a doubled letter,
  ...), a change that makes a number (the word's length, its vowels) or a word (as is, in lower
  case, backwards, its last letter) of each kept word and a summary
  (``sum_vowel_counts_plural(sentence)``), every combination once (308 tasks).

And a twelfth code source:

- ``grid-functions``: the composed tasks' shape over the rows of ``grid: List[List[int]]`` (rows
  may differ in length): a row filter (all positive, with a zero, strictly increasing, ...), a
  change that makes a number (its sum, largest, span, ...) or a row (reversed, sorted, squared) of
  each kept row and a summary (``sum_row_sums_rows_with_zero(grid)``), every combination once (469
  tasks).

And a thirteenth:

- ``line-functions``: the composed tasks' shape over the lines of ``text: str`` (settings, log
  lines, comments; some indented, some only spaces): a line filter (comments, with a digit,
  indented, ...), a change that makes a number (its length, words, digits' sum, indent) or a line
  (stripped, in upper case, its first word) of each kept line and a summary
  (``sum_digit_sums_comment_lines(text)``), every combination once (371 tasks).

And a fourteenth:

- ``field-functions``: the composed tasks' shape over the fields of ``record: str`` (fields separated
  by commas: numbers, words, padded or empty fields): a field filter (whole numbers, letters only,
  padded, ...), a change that makes a number (its length, digits, letters, spaces) or a field
  (stripped, in lower case, backwards) of each kept field and a summary
  (``sum_digit_counts_number_fields(record)``), every combination once (371 tasks).

And a fifteenth:

- ``tuple-functions``: the composed number tasks' filters and changes with summaries that return two
  values (HumanEval's ``sum_product`` shape): how many and their sum, sum and product, smallest and
  largest, first and last (``count_and_sum_squared_even(numbers) -> Tuple[int, int]``), every
  combination once (320 tasks).

And a sixteenth:

- ``string-pair-functions``: the composed tasks' shape over two strings of one length read position
  by position (HumanEval's ``string_xor`` shape): a filter over the character pairs (a[i], b[i])
  (matching, differing, both letters, a digit on either side, ...), a change that makes a number (a
  code point, the distance between the two) or a character (a[i], b[i], the later or earlier one)
  of each kept pair and a summary (``joined_later_chars_differing(a, b)``), every combination once
  (384 tasks).

And a seventeenth:

- ``number-word-functions``: the composed tasks' shape over number words (HumanEval's
  ``sort_numbers`` shape: ``text`` is words from 'zero' to 'nine' separated by spaces): a filter over
  the numbers the words name (even, odd, greater than 4, prime, ...), a change that makes a number
  (the value, its square, nine minus it) or a word (in upper case, capitalised) of each kept word and
  a summary, the word summaries with one more, ordered by value (``sum_values_even_words(text)``),
  every combination once (364 tasks).

And an eighteenth:

- ``interval-functions``: the composed tasks' shape over closed intervals (HumanEval's
  ``intersection`` shape: ``intervals: List[Tuple[int, int]]``, each (start, end) with start <= end):
  a filter (holding 0, longer than 3, single points, ...), a change that makes a number (the length,
  start, middle, how many integers it holds) or an interval (as is, widened, moved) of each kept
  interval and a summary, the interval ones sorted, longest, the span covering them
  (``sum_lengths_holding_zero(intervals)``), every combination once (406 tasks).

And a nineteenth:

- ``range-functions``: the composed tasks' shape over the numbers from 1 to ``n: int`` (HumanEval's
  tasks on one integer: ``count_up_to``, ``fizz_buzz``): a filter (even, primes, perfect squares,
  palindromes, ...), a change of each kept number (squared, doubled, its digit sum, ...) and a number
  summary (``sum_squared_primes_to_n(n)``), every combination once (378 tasks).

And a twentieth:

- ``paren-functions``: the composed tasks' shape over groups of brackets (HumanEval's
  ``separate_paren_groups`` and ``parse_nested_parens`` shape: ``paren_string`` is balanced groups
  of round brackets separated by spaces): a group filter (nested more than one level, flat, one
  outer pair, ...), a change that makes a number (the nesting depth, pairs, top-level pairs,
  brackets) or a group (as is, wrapped in one more pair, doubled, in square brackets) of each kept
  group and a summary (``sum_depths_deep_groups(paren_string)``), every combination once (371 tasks).

And a twenty-first:

- ``fraction-functions``: the composed tasks' shape over fractions written as text (HumanEval's
  ``simplify`` shape: ``fractions: List[str]``, each "numerator/denominator"): a fraction filter
  (less than one, a whole number, in lowest terms, ...), a change that makes a number (numerator,
  denominator, whole part, remainder) or a fraction (as is, in lowest terms, upside down, its
  numerator doubled) of each kept fraction and a summary, the fraction ones sorted by value and
  largest (``sum_whole_parts_improper(fractions)``), every combination once (371 tasks).

And a twenty-second:

- ``date-functions``: the composed tasks' shape over dates written as text (HumanEval's
  ``valid_date`` shape: ``dates: List[str]``, each "YYYY-MM-DD"): a date filter (January to June,
  summer, a leap year, a weekend, ...), a change that makes a number (year, month, day, day of the
  year) or a date (as is, written MM/DD/YYYY, the next day, the first of its month) of each kept
  date and a summary, the date ones sorted and latest by date
  (``sum_days_of_year_weekend(dates)``), every combination once (371 tasks).

And a twenty-third:

- ``version-functions``: the composed tasks' shape over version strings (``versions: List[str]``,
  each "MAJOR.MINOR.PATCH", compared number by number as package managers do): a version filter
  (before 1.0.0, patched, an even minor number, a two-digit number, ...), a change that makes a
  number (major, minor, patch, their sum) or a version (as is, the next patch, the next minor,
  tagged with a "v") of each kept version and a summary, the version ones sorted and newest by
  version (``sum_patches_two_digit(versions)``), every combination once (371 tasks).

And a twenty-fourth:

- ``time-functions``: the composed tasks' shape over clock times written as text (``times:
  List[str]``, each a 24-hour "HH:MM" of one day): a time filter (before noon, the afternoon, on the
  hour, on a quarter hour, an odd hour, ...), a change that makes a number (hour, minute, minutes
  since or until midnight) or a time (as is, on a 12-hour clock, a quarter of an hour later, the
  start of its hour) of each kept time and a summary, the time ones sorted and latest by the clock
  (``sum_minutes_quarter_hour(times)``), every combination once (371 tasks).

And an eleventh story source:

- ``portion-problems``: GSM8K-shaped stories from 40 further templates of parts of a whole:
  fractions and percents of a group, an amount or a time, then a part of what is left ("a third
  of the rest").

And a twenty-fifth code source:

- ``money-functions``: the composed tasks' shape over amounts of money written as text
  (``amounts: List[str]``, each "$D.CC"): an amount filter (under $10, over $50, whole dollars,
  ending in .99, ...), a change that makes a number (cents, whole dollars, the cents past them,
  rounded dollars) or an amount (as is, doubled, with 10% added, a dollar off) of each kept amount
  and a summary, the amount ones sorted and largest by value (``sum_cents_ending_99(amounts)``),
  every combination once (371 tasks).

And a twenty-sixth:

- ``path-functions``: the composed tasks' shape over file paths (HumanEval's ``file_name_check``
  shape: ``paths: List[str]``, each a relative POSIX path "dir/sub/name.ext"): a path filter
  (Python files, hidden files, at the top level, two or more directories deep, under src, without
  an extension, ...), a change that makes a number (directories deep, the lengths of the file name,
  the path and the extension) or a path (as is, its file name, its directory, without its
  extension) of each kept path and a summary (``sum_depths_python(paths)``), every combination
  once (371 tasks).

And a twenty-seventh:

- ``binary-functions``: the composed tasks' shape over binary numbers written as text (HumanEval's
  ``decimal_to_binary`` material: ``binaries: List[str]``, each the digits 0 and 1 without leading
  zeros): a filter (odd, even, palindromes, two 1 digits in a row, five or more digits, a value over
  10, ...), a change that makes a number (value, 1 digits, digits, 0 digits at the end) or a binary
  number (as is, its digits flipped, reversed, plus one) of each kept one and a summary, the binary
  ones sorted and largest by value (``sum_values_odd(binaries)``), every combination once (371
  tasks).

And a twenty-eighth:

- ``identifier-functions``: the composed tasks' shape over Python identifiers (HumanEval's
  ``Strongest_Extension`` material: ``identifiers: List[str]``, each in snake_case, camelCase,
  PascalCase or CONSTANT_CASE, some private, some ending in a digit): a filter (snake_case,
  camelCase, all in capitals, private, with a digit, short, ...), a change that makes a number
  (length, capital letters, underscores, words) or an identifier (as is, in snake_case, in
  camelCase, in upper case) of each kept one and a summary (``sum_capitals_camel_case(identifiers)``),
  every combination once (371 tasks).

And a twenty-ninth and a thirtieth:

- ``color-functions``: the composed tasks' shape over hex colors (HumanEval's ``hex_key``
  material: ``colors: List[str]``, each ``#rrggbb`` in lower case, some grey, some web-safe): a
  filter (grey, reddish, greenish, bluish, dark, web-safe, all), a change that makes a number (red
  part, sum of the parts, largest part, spread) or a color (as is, inverted, made grey, in upper
  case) of each kept one and a summary, the colors sorted and largest by their hex digits' value
  (``sum_brightness_grey(colors)``), every combination once (371 tasks).
- ``email-functions``: the same shape over e-mail addresses (``emails: List[str]``, each
  ``user@domain``, the user name a first name, sometimes with a dot and a last name or a number,
  one in five capitalized): a filter (a dot in the user name, a digit, ``.com``, a short user name,
  a capital letter, a long domain, all), a change that makes a number (length, user name's length,
  dots, digits) or a text (as is, the user name, the domain, in lower case) of each kept one and a
  summary (``sum_dots_dotted(emails)``), every combination once (371 tasks).

And a thirty-first:

- ``people-functions``: the same shape over a list of dictionaries (``people: List[dict]``, each
  ``{'name': str, 'age': int, 'city': str}``: children, teenagers and adults): a filter (adults,
  children, teenagers, living in Oslo, a long name, an even age, all), a change that makes a number
  (age, age in ten years, name's length, city's length) or a text (name, city, a "name (age)"
  label, name in upper case) of each kept person and a summary (``sum_ages_adults(people)``), every
  combination once (364 tasks: no text change is "as is", so none has a count).

And a thirty-second:

- ``sequence-functions``: the composed tasks' shape over the terms of a sequence made from ``n: int``
  (HumanEval's ``get_odd_collatz``, ``tri`` and ``factorize`` shape: a rule walked with a loop or a
  recurrence): eight sequences (the first n terms of a Fibonacci-like sequence, of the triangular
  numbers and of the powers of two, the divisors of n, its prime factors, n halved again and again,
  a walk from n to 1 by thirds, the chain of digit sums), a filter over the terms (even, odd,
  multiples of three, above ten, all) and a number summary (``sum_even_divisors(n)``), every
  combination once (360 tasks).

And a thirty-third:

- ``stock-functions``: the same shape over a nested dictionary (``stock: Dict[str, Dict[str, int]]``,
  each shop's name to its shelf, item name to count, a third of the counts 0): a filter (an 'apple'
  entry, more than 30 items, three kinds or more, an empty shelf entry, a long name, every count at
  least 5, all), a change that makes a number (total count, kinds, apples, largest count) or a text
  (name, name in upper case, most stocked item, items joined by '+') of each kept shop and a summary
  (``sum_totals_with_apples(stock)``), every combination once (364 tasks).

And a thirty-fourth:

- ``log-functions``: the same shape over log lines (``logs: List[str]``, each ``"LEVEL: message"``,
  LEVEL one of ERROR, WARN, INFO and DEBUG): a filter (errors, warnings, all but DEBUG, a message
  about a disk, of more than three words, with a digit, all), a change that makes a number (the
  message's length, words, digits, first whole number) or a text (message, level in lower case,
  message's first word, message in upper case) of each kept line and a summary
  (``sum_message_lengths_errors(logs)``), every combination once (364 tasks).

And a thirty-fifth:

- ``url-functions``: the same shape over web addresses (``urls: List[str]``, each
  ``"scheme://host/path?query"``, the path and the query possibly empty): a filter (https, a query,
  a host starting with 'www.', a host ending with '.org', two path segments or more, at most 30
  characters, all), a change that makes a number (the host's length, path segments, query
  parameters, the address's length) or a text (host, scheme in upper case, last path segment, host
  without 'www.') of each kept address and a summary (``sum_host_lengths_secure(urls)``), every
  combination once (364 tasks).

And a thirty-sixth:

- ``ip-functions``: the same shape over IPv4 addresses (``addresses: List[str]``, dotted quads such
  as ``"192.168.1.10"``): a filter (a private range, loopback, an even last number, a last number
  below 100, a 0 among the numbers, a first number below 128, all), a change that makes a number
  (the sum of the four numbers, the first or last number, the length) or a text (the first three
  numbers, the numbers reversed, every number padded to three digits, eight hexadecimal digits) of
  each kept address and a summary (``sum_number_sums_private(addresses)``), every combination once
  (364 tasks).

And a thirty-seventh:

- ``point-functions``: the same shape over points of the plane (``points: List[Tuple[int, int]]``,
  ``(x, y)`` pairs from -6 to 6): a filter (both coordinates positive, on an axis, on a diagonal,
  within distance 5 of the origin, above the x-axis, an even x, all), a change that makes a number
  (the Manhattan or squared distance from the origin, either coordinate) or a text (the quadrant,
  the nearest compass direction, the signs, ``"x:y"``) of each kept point and a summary
  (``sum_manhattan_first_quadrant(points)``), every combination once (364 tasks).

And a thirty-eighth:

- ``card-functions``: the same shape over playing cards (``cards: List[str]``, a rank and a suit
  letter like ``"10H"`` or ``"QS"``): a filter (hearts, red, face cards, number cards, an even rank,
  spades, all), a change that makes a number (the rank's value with the ace low or high, blackjack
  points, the text's length) or a text (the suit's name, the rank, the colour, ``"Q of spades"``)
  of each kept card and a summary (``sum_values_hearts(cards)``), every combination once (364
  tasks).

And a thirty-ninth:

- ``chess-functions``: the same shape over squares of a chess board (``squares: List[str]``, a file
  letter and a rank digit like ``"e4"``): a filter (dark, light, the centre four, the board's edge,
  white's half, the kingside, all), a change that makes a number (the rank, the file's number, the
  distance from ``"a1"`` in king moves, the board index) or a text (the colour, the square mirrored
  across the middle rank or file, upper case) of each kept square and a summary
  (``sum_ranks_dark(squares)``), every combination once (364 tasks).

And a fortieth:

- ``note-functions``: the same shape over musical notes (``notes: List[str]``, a name from 'C' to 'B'
  with sharps written '#' and an octave digit, like ``"F#3"``): a filter (sharp, natural, octave 4,
  above middle C, octave 3 or lower, the notes of a C major chord, all), a change that makes a number
  (the octave, the semitone within the octave, the MIDI number, the distance from middle C in
  semitones) or a text (the name without its octave, the note an octave or a semitone higher, lower
  case) of each kept note and a summary (``sum_octaves_sharp(notes)``), every combination once (364
  tasks).

And a forty-first:

- ``size-functions``: the same shape over file sizes (``sizes: List[str]``, a whole number from 1 to
  999 and a unit 'B', 'KB', 'MB' or 'GB', like ``"640KB"``, 1 KB being 1024 bytes): a filter (in
  kilobytes, in megabytes, over 100 MB, under 100 KB, a round number, an even number, all), a change
  that makes a number (the number alone, the unit's power of 1024, the size in whole kilobytes or
  megabytes) or a text (the unit alone, the size doubled, a space before the unit, lower case) of each
  kept size and a summary (``sum_numbers_kb(sizes)``), every combination once (364 tasks).

And a forty-second:

- ``temperature-functions``: the same shape over temperatures (``temperatures: List[str]``, a whole
  number, possibly negative, and a unit 'C' or 'F', like ``"-4C"``): a filter (in Celsius, in
  Fahrenheit, below freezing, over 30 degrees Celsius, negative, even, all), a change that makes a
  number (the number alone, its absolute value, whole degrees Celsius or Fahrenheit, rounded down) or
  a text (the unit alone, one degree warmer, a space before the unit, lower case) of each kept
  temperature and a summary (``sum_numbers_in_celsius(temperatures)``), every combination once (364
  tasks).

And a forty-third:

- ``distance-functions``: the same shape over distances (``distances: List[str]``, a whole number
  from 1 to 300 and a unit 'km' or 'mi', like ``"12km"``, a mile being 1609 metres): a filter (in
  kilometres, in miles, over 100 km, under 10 km, a multiple of 10, odd, all), a change that makes a
  number (the number alone, the distance in metres, in whole kilometres or whole miles, rounded
  down) or a text (the unit alone, one unit longer, a space before the unit, upper case) of each kept
  distance and a summary (``sum_numbers_in_km(distances)``), every combination once (364 tasks).

And a forty-fourth:

- ``percent-functions``: the same shape over percentages (``percents: List[str]``, a whole number
  from 0 to 100 and a percent sign, like ``"45%"``): a filter (over 50, under 10, at least 60, a
  multiple of 10, a multiple of 25, odd, all), a change that makes a number (the number alone, the
  rest to 100, the share of 200, whole tenths rounded down) or a text (a decimal with two places,
  the word 'percent', one point higher, the rest to 100) of each kept percentage and a summary
  (``sum_numbers_high(percents)``), every combination once (364 tasks).

And a forty-fifth:

- ``seat-functions``: the same shape over airplane seats (``seats: List[str]``, a row from 1 to 40
  and a letter from 'A' to 'F', like ``"12C"``): a filter (window seats A and F, aisle seats C and
  D, middle seats B and E, rows under 10, rows over 30, even rows, all), a change that makes a
  number (the row, the letter's place in the row, the seat's number counted from the front, the
  rows behind it in a 40-row cabin) or a text (the letter alone, the same seat one row back, lower
  case, a dash between row and letter) of each kept seat and a summary
  (``sum_rows_window(seats)``), every combination once (364 tasks).

And a forty-sixth:

- ``ingredient-functions``: the same shape over recipe lines (``ingredients: List[str]``, a whole
  quantity from 1 to 12, a unit 'cup' (plural 'cups'), 'tbsp' or 'tsp' and an ingredient, like
  ``"2 cups flour"``): a filter (in cups, in spoons, over 4, a quantity of 1, sweet ones, even
  quantities, all), a change that makes a number (the quantity, twice it, the amount in teaspoons,
  the letters of the ingredient's name) or a text (the ingredient alone, the quantity doubled, the
  unit alone, upper case) of each kept line and a summary
  (``sum_quantities_cups(ingredients)``), every combination once (364 tasks).

And a forty-seventh:

- ``match-functions``: the same shape over football results (``results: List[str]``, home goals, a
  dash and away goals, like ``"3-1"``): a filter (home wins, away wins, draws, more than four goals,
  a side kept to nil, an even number of goals, all), a change that makes a number (the goals in the
  match, the goal difference, the home side's goals, the home side's points) or a text (the score
  from the away side, spaced, the winner, one more home goal) of each kept result and a summary
  (``sum_totals_home_wins(results)``), every combination once (364 tasks).

And a forty-eighth and a forty-ninth:

- ``dice-functions``: the same shape over dice rolls in tabletop notation (``rolls: List[str]``, 1 to
  4 dice of 4 to 20 sides and an optional bonus, like ``"2d6+3"``): a filter (six-sided dice, one
  die, with a bonus, without, dice over 8 sides, an even number of dice, all), a change that makes a
  number (the lowest total, the highest, the dice, the bonus) or a text (twice the dice, without the
  bonus, the die, upper case) of each kept roll and a summary (``sum_highest_d6(rolls)``), every
  combination once (364 tasks).
- ``grade-functions``: the same shape over letter grades (``grades: List[str]``, ``"F"`` or A to D
  with an optional sign, like ``"B+"``): a filter (C- or better, A grades, a plus, a minus, no sign,
  D and F, all), a change that makes a number (the letter's points, points in tenths with the sign,
  steps above an F, the sign as a number) or a text (the letter, a step up, lower case, the sign in
  words) of each kept grade and a summary (``sum_points_passing(grades)``), every combination once
  (364 tasks).

And a fiftieth:

- ``compass-functions``: the same shape over the eight compass points (``directions: List[str]``,
  ``"N"``, ``"NE"``, ... ``"NW"``): a filter (a north, south or east part, cardinal, diagonal, from N
  clockwise to S, all), a change that makes a number (the bearing in degrees, the opposite's
  bearing, the eighth turns back to north, the letters) or a text (the opposite, a quarter turn
  clockwise, the full name, lower case) of each kept direction and a summary
  (``sum_bearings_northern(directions)``), every combination once (364 tasks).

And a fifty-first:

- ``phone-functions``: the same shape over phone numbers (``phones: List[str]``, ten digits in three
  dashed groups like ``"415-555-0142"``): a filter (toll-free, the exchange 555, an even last digit,
  a line below 5000, a doubled digit, an area code above 500, all), a change that makes a number (the
  area code, the digit sum, the line, the zeros) or a text (digits only, dotted, the area code in
  brackets, masked) of each kept number and a summary (``sum_area_codes_toll_free(phones)``), every
  combination once (364 tasks).

And a fifty-second:

- ``formula-functions``: the same shape over chemical formulas (``formulas: List[str]``, two or three
  of C, H, N, O, S, Na and Cl with their counts, like ``"C2H6O"``): a filter (with carbon, with
  oxygen, two elements, sodium or chlorine, at most 5 atoms, no hydrogen, all), a change that makes
  a number (the atoms, the elements, the hydrogens, the mass) or a text (the elements, every count
  doubled, without hydrogen, lower case) of each kept formula and a summary
  (``sum_masses_with_carbon(formulas)``), every combination once (364 tasks).

And a fifty-third:

- ``roman-functions``: the same shape over Roman numerals (``numerals: List[str]``, the standard
  numerals of I, V, X, L and C, like ``"XIV"``): a filter (below ten, even, with a smaller letter
  before a larger one, at most 3 letters, 100 or more, multiples of 5, all), a change that makes a
  number (the value, the letters, the hundreds digit, the different letters) or a text (lower case,
  the next numeral, twice the value, in digits) of each kept numeral and a summary
  (``sum_values_below_ten(numerals)``), every combination once (364 tasks).

And a fifty-fourth:

- ``isbn-functions``: the same shape over ISBN-13 book numbers (``isbns: List[str]``, like
  ``"978-0-306-40615-7"``, a third of them with a wrong check digit): a filter (a right check digit,
  the prefix 979, group 0 or 1, an even last digit, a digit sum above 60, a publisher block from 0,
  1 or 2, all), a change that makes a number (the check digit, the digit sum, the group, the
  weighted sum) or a text (digits only, spaced, the title block, the check digit put right) of each
  kept number and a summary (``sum_check_digits_valid(isbns)``), every combination once (364 tasks).

And a fifty-fifth:

- ``dna-functions``: the same shape over DNA strands (``strands: List[str]``, 4 to 12 letters of A,
  C, G and T, a third starting with the codon ATG, like ``"ATGCA"``): a filter (more G and C than A
  and T, starting with ATG, an even length, ending with G or C, a doubled letter, more than 8
  letters, all), a change that makes a number (the length, the G and C letters, the A letters, the
  whole codons) or a text (the complement, the reverse complement, the RNA, lower case) of each kept
  strand and a summary (``sum_lengths_gc_rich(strands)``), every combination once (364 tasks).

And a fifty-sixth:

- ``password-functions``: the same shape over passwords (``passwords: List[str]``, a word,
  capitalised two times in five, with 0-4 digits and a symbol of ``!@#$%&*`` two times in five, like
  ``"River42!"``): a filter (at least 8 characters with a digit and an upper-case letter, a digit, a
  symbol, fewer than 8 characters, no upper-case letter, a letter first, all), a change that makes a
  number (the length, the digits, the upper-case letters, the kinds of character) or a text (masked
  but the last two, backwards, the letters only, the case swapped) of each kept password and a
  summary (``sum_lengths_strong(passwords)``), every combination once (364 tasks).

And a fifty-seventh:

- ``plate-functions``: the same shape over car number plates (``plates: List[str]``, two or three
  capital letters, a hyphen, a space or nothing, 2-4 digits and sometimes one more letter, like
  ``"AB-123"``): a filter (a hyphen, three letters first, an even number, no vowel, more than 6
  characters, a letter last, all), a change that makes a number (the number, its digit sum, the
  letters, the length) or a text (compact, lower case, the letters only, the digits masked) of each
  kept plate and a summary (``sum_numbers_even_number(plates)``), every combination once (364 tasks).

And a fifty-eighth:

- ``tag-functions``: the same shape over hashtags (``tags: List[str]``, a ``#`` and one to three words,
  in CamelCase three times in five and in lower case otherwise, with a year a quarter of the time, like
  ``"#SummerFun2024"``): a filter (CamelCase, a year at the end, at most 10 characters, no upper-case
  letter, a vowel first, more than 14 characters, all), a change that makes a number (the length, the
  capitals, the letters, the year or 0) or a text (without the ``#``, lower case, split into words at
  the capitals, the letters only) of each kept tag and a summary (``sum_lengths_camel(tags)``), every
  combination once (364 tasks).

And a twelfth story source:

- ``average-problems``: GSM8K-shaped stories from 40 further templates of means and averages: the
  mean of a few values, a total from a mean, the value that brings a mean to a goal, averages per
  day, per person or per trip, a mean that moves when a value joins or leaves.

And a thirteenth:

- ``relation-problems``: GSM8K-shaped stories from 40 further templates of quantities defined by
  each other: one amount given, the others twice as many, a few fewer, half as many or a share more,
  ages now, years ago and later, a gift or a trade that evens two amounts, and a question about a
  total, a difference or what is left.

And a fourteenth:

- ``score-problems``: GSM8K-shaped stories from 40 further templates of points, games and tallies:
  shots, goals and tries worth different points, quiz and test scores with bonuses and penalties,
  league points from wins and draws, rounds of a game added up, a score still needed to catch up,
  to reach a target or to count down to zero.

And a fifteenth:

- ``farm-problems``: GSM8K-shaped stories from 40 further templates of farms, gardens and animals:
  animals' legs, eggs, milk, wool and honey, feed and hay, rows of plants and trees, harvests sold
  at a market, flocks and herds that grow or shrink.

And a sixteenth:

- ``pay-problems``: GSM8K-shaped stories from 40 further templates of pay and savings: hourly wages
  and overtime past 40 hours, commissions, tips, piece rates, two jobs, raises, taxes taken out,
  allowances and chores, savings towards a goal, earnings split by the hours worked.

And a seventeenth:

- ``school-problems``: GSM8K-shaped stories from 40 further templates of school days: classes and
  students, buses for a field trip, supplies bought in packs, lunches and bake sales, library books
  and reading minutes, grades and averages, attendance, fundraisers.

And an eighteenth:

- ``trip-problems``: GSM8K-shaped stories from 40 further templates of trips and travel: road trips
  in legs, fuel and mileage, hotel nights, tickets for families, luggage limits, car rentals by the
  day and the mile, tolls, exchange rates, timetables and time zones, campsites and park fees.

And a nineteenth:

- ``kitchen-problems``: GSM8K-shaped stories from 40 further templates of cooking and baking:
  recipes scaled up or down, batches of cookies and muffins on trays, oven and cooking times per
  kilogram or per batch, ingredients bought in packs or by weight, servings per pot, pie or cake, a
  café's or bakery's orders and sales, leftovers, cups, grams and spoons, a dinner party's shopping.

And a twentieth:

- ``garden-problems``: GSM8K-shaped stories from 40 further templates of gardens: beds planted in
  rows, seeds in packets and how many sprout, watering cans, hoses and rain barrels, bags of soil,
  compost and mulch, fences and edging, harvests weighed, shared and sold at a market stall, plants
  in pots and trays, lawns mowed and hedges trimmed for pay, plants growing, a community garden.

And a twenty-first:

- ``craft-problems``: GSM8K-shaped stories from 40 further templates of crafts: knitting and crochet
  by rows, squares and balls of yarn, beads and bracelets, candles and soap, quilts and sewing by the
  meter, painting walls and canvases, woodwork cut from planks, pottery and its kiln, cards,
  scrapbooks and paper chains, a craft fair's sales, a class's supplies.

And a twenty-second:

- ``party-problems``: GSM8K-shaped stories from 40 further templates of parties: balloons,
  invitations and guests, cakes, pizzas and cupcakes shared out, goody bags, halls, tables and chairs
  rented, entertainers paid by the hour, games and teams, drinks by the bottle and the pitcher,
  decorations, a school dance's tickets.

And a twenty-third:

- ``pet-problems``: GSM8K-shaped stories from 40 further templates of pets: food by the cup, the
  bag and the can, walks, fish tanks and their water, a vet's bills, boarding and grooming, litters
  of puppies, a pet shop's stock, a shelter's adoptions, pet sitting for pay, hamsters, birds and a
  horse's feed.

And a twenty-fourth:

- ``home-problems``: GSM8K-shaped stories from 40 further templates of running a home: the
  electricity, water and internet bills, rent split between roommates, laundry loads, moving boxes
  and vans, cleaning rotas, light bulbs and their watts, furniture and shelves, heating oil, a
  leaking tap, chores and pocket money.

And a twenty-fifth:

- ``sport-problems``: GSM8K-shaped stories from 40 further templates of sport: running laps and
  training weeks, swimming lengths, cycling, a league's points for wins and draws, knockout
  tournaments, team kits and match tickets, gyms and clubs, a coach's drills, free throws, a
  marathon's training and a stadium's seats.

And a twenty-sixth:

- ``weather-problems``: GSM8K-shaped stories from 40 further templates of weather: rain by the
  millimeter, snow that falls and melts, temperatures through a day, sunny and rainy days, rain
  barrels and reservoirs, a weather station's means, umbrellas and ice cream sold by the weather,
  storms, wind and frost.

And a twenty-seventh:

- ``music-problems``: GSM8K-shaped stories from 40 further templates of music: a band's tour and
  its tickets, practice minutes and lessons, instruments and strings, albums by the minute and
  second, choirs and orchestras by section, concerts by the clock, a playlist, streaming plays and
  their pay, a record shop's sales.

And a twenty-eighth:

- ``factory-problems``: GSM8K-shaped stories from 40 further templates of a factory: production
  lines and shifts, machines and their output, boxes, pallets and trucks, inspection and faulty
  parts, a warehouse's stock, pay and overtime, materials bought and used, a machine that pays for
  itself; every answer at or above zero over the slots' ranges.

And a twenty-ninth:

- ``transit-problems``: GSM8K-shaped stories from 40 further templates of getting around: buses and
  their stops, trains and carriages, trams, ferries, taxis and rental cars, timetables by the clock,
  passes against single tickets, fuel, tolls, parking and luggage; every answer at or above zero
  over the slots' ranges.

And a thirtieth:

- ``reading-problems``: GSM8K-shaped stories from 40 further templates of books and reading: pages a
  day, libraries and their fines, loans and members, bookshelves and bookshops, book clubs and book
  fairs, newspapers and magazines, audiobooks and e-readers, printing and typing; every answer at or
  above zero over the slots' ranges.

Responses come from the target (self-distillation): Hugging Face ``generate`` on CPU for small
models, ``sglang.Engine`` on a GPU host.  A record is ``{"input_ids": prompt + response,
"loss_start": len(prompt)}``; the loss covers the response only.
"""

from __future__ import annotations

import ast
import calendar
import datetime
import importlib
import inspect
import itertools
import json
import math
import os
import posixpath
import random
import re
import string
import textwrap
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from fractions import Fraction
from typing import TypeVar

import torch
from tqdm import tqdm

_Drawn = TypeVar("_Drawn")  # what a _distinct_draws draw returns

DEFAULT_SOURCES = ("stdlib-functions", "coding-tasks", "math-word-problems", "concepts")

# Prompt-mix tables: kept compact on purpose (one idea per line, not one word per line).
# fmt: off
_STDLIB_MODULES = (
    "textwrap", "string", "statistics", "fractions", "heapq", "bisect", "functools", "difflib", "calendar",
    "colorsys", "shlex", "fnmatch", "glob", "ipaddress", "json", "csv", "random", "html", "urllib.parse",
    "email.utils", "posixpath", "base64", "quopri", "pprint", "reprlib", "copy", "keyword", "dataclasses",
    "shutil", "tempfile", "zipfile", "tarfile", "gzip", "configparser", "argparse", "logging", "locale",
    "gettext", "mimetypes", "webbrowser", "secrets", "uuid", "hmac", "platform", "sysconfig", "tokenize",
    "inspect", "types", "typing", "contextlib", "abc", "numbers", "enum", "graphlib", "pathlib", "os.path",
    "http.cookies", "wave", "plistlib", "netrc", "filecmp", "linecache", "traceback",
    "warnings", "weakref", "queue", "sched", "selectors", "socketserver", "smtplib", "ftplib", "poplib",
    "imaplib", "xml.dom.minidom", "xml.etree.ElementTree", "html.parser", "codecs",
    "encodings.idna", "stringprep", "unicodedata", "operator", "itertools", "collections", "datetime",
)

_OPERATIONS = (
    "returns the {k} largest values of", "removes duplicates from", "counts how often each item occurs in",
    "reverses", "sorts by absolute value", "returns the running sum of",
    "splits into chunks of size {k} from",
    "finds the longest increasing run in", "rotates by {k} positions", "returns every {k}-th element of",
    "checks whether it is a palindrome:", "interleaves with its reverse:",
    "returns the pairwise differences of",
    "normalises to the range 0..1:", "groups consecutive equal items of", "finds the index of the minimum of",
    "computes the median of", "returns the product of the non-zero items of",
    "flattens one level of nesting in",
    "returns items that appear exactly {k} times in",
)
_DATA = (
    "a list of integers", "a list of floats", "a string", "a list of strings", "a tuple of numbers",
    "a list of words", "a list of (name, score) pairs", "a dictionary's values", "a list of lists",
    "a bytes object",
)
_NAMES = ("Ava", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivan", "Jin", "Kofi", "Lena",
          "Mateo", "Nia",
          "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tomas", "Uma", "Viktor", "Wen", "Yara", "Zane")
_ITEMS = (("apples", 1, 3), ("pencils", 1, 2), ("books", 5, 20), ("tickets", 8, 40), ("plants", 3, 15),
          ("cupcakes", 2, 6), ("marbles", 1, 1), ("stamps", 1, 4), ("candles", 2, 9), ("notebooks", 2, 7))
_MATH_TEMPLATES = (
    "{a} has {x} {item}. {b} gives {a} {y} more, and {a} then gives away {z}. How many {item} does "
    "{a} have now?",
    "{a} buys {x} {item} at ${p} each and pays with a ${bill} bill. How much change does {a} get?",
    "A box holds {x} {item}. {a} fills {y} boxes and has {z} {item} left over. How many {item} did "
    "{a} start with?",
    "{a} reads {x} pages a day for {y} days, then {z} pages on the last day. How many pages did {a} "
    "read in total?",
    "{a} saves ${x} every week. After {y} weeks {a} spends ${z}. How much money is left?",
    "{a} and {b} share {x} {item} so that {a} gets {y} more than {b}. How many {item} does {b} get?",
    "A shop sells {item} for ${p} each, or {y} for ${q}. How much does {a} save buying {y} at the "
    "bundle price?",
    "{a} runs {x} kilometres on Monday, twice that on Tuesday and {z} fewer than Tuesday on Wednesday. "
    "How far did {a} run over the three days?",
    "There are {x} {item} in a basket. {a} takes a third of them rounded down and {b} takes {z}. How "
    "many remain?",
    "{a} earns ${p} per hour and works {x} hours a week for {y} weeks. What are {a}'s total earnings?",
)

# fmt: on


def _stable_signature(fn) -> str | None:
    """``fn``'s signature as Python source, or None when it has none, prints a default as ``<...>``
    or has a default that is an absolute path.

    ``<...>`` defaults (``<class 'dict'>``, sentinels printing their memory address) are not Python,
    and an address would make the mix, and so which prompts a chunk holds, differ from process to
    process; a path default is the machine's (``platform.architecture(executable=sys.executable)``
    differs with the interpreter's path, even between ``python`` and ``python3`` of one venv).
    """
    try:
        parameters = inspect.signature(fn)
        signature = str(parameters)
        ast.parse(f"def f{signature}: pass")
    except (TypeError, ValueError, SyntaxError):
        return None
    if any(
        isinstance(p.default, str) and len(p.default) > 1 and os.path.isabs(p.default)
        for p in parameters.parameters.values()
    ):
        return None
    return signature


def _stdlib_callables() -> Iterator[tuple[str, str, str, str]]:
    """(module, qualified name, signature, docstring) of documented public stdlib functions and methods.

    Kept: a stable signature (:func:`_stable_signature`) and a docstring of 40 characters or more.
    """
    for module_name, qualname, fn in _public_stdlib_functions():
        documented = _documented_signature(fn)
        if documented is not None:
            yield module_name, qualname, *documented


def _documented_signature(fn) -> tuple[str, str] | None:
    """``fn``'s stable signature (:func:`_stable_signature`) and docstring, or None without either
    (a docstring shorter than 40 characters counts as none)."""
    doc = inspect.getdoc(fn)
    signature = _stable_signature(fn)
    if signature is None or not doc or len(doc) < 40:
        return None
    return signature, doc


def _public_stdlib_functions() -> Iterator[tuple[str, str, object]]:
    """(module name, qualified name, function) of the public functions and methods of the stdlib modules."""
    for module_name in _STDLIB_MODULES:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # a module missing on this Python is simply skipped
            continue
        for name, obj in sorted(vars(module).items()):
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield module_name, name, obj
            elif inspect.isclass(obj):
                for method_name, fn in sorted(vars(obj).items()):
                    # Other libraries patch methods in (transformers adds Logger.warning_advice):
                    # keeping only the module's own keeps the mix the same in every process.
                    own = getattr(fn, "__module__", None) == module.__name__
                    if not method_name.startswith("_") and inspect.isfunction(fn) and own:
                        yield module_name, f"{name}.{method_name}", fn


def stdlib_function_prompts() -> list[str]:
    """Complete-this-function prompts from public, documented stdlib functions."""
    prompts: list[str] = []
    for module_name, name, signature, doc in _stdlib_callables():
        if "." in name:  # a method: this source keeps module-level functions
            continue
        summary = doc.split("\n\n")[0].strip().replace('"""', "'''")
        body = f'def {name}{signature}:\n    """{summary}\n    """\n'
        prompts.append(
            f"Complete the following Python function from the {module_name} module.\n\n```python\n{body}```"
        )
    return prompts


def coding_task_prompts() -> list[str]:
    prompts = []
    for i, op in enumerate(_OPERATIONS):
        for j, data in enumerate(_DATA):
            k = 2 + (i + j) % 4
            prompts.append(
                f"Write a Python function that {op.format(k=k)} {data}. Include a short docstring and "
                f"an example."
            )
    return prompts


def math_word_problems(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    prompts = []
    for _ in range(count):
        a, b = rng.sample(_NAMES, 2)
        item, lo, hi = rng.choice(_ITEMS)
        x, y, z = rng.randint(6, 60), rng.randint(2, 12), rng.randint(1, 5)
        p = rng.randint(lo, hi)
        values = dict(
            a=a,
            b=b,
            item=item,
            x=x,
            y=y,
            z=z,
            p=p,
            q=max(1, p * y - rng.randint(1, y)),
            bill=(p * x // 10 + 1) * 10 + rng.choice((0, 10, 20)),
        )
        prompts.append(rng.choice(_MATH_TEMPLATES).format(**values) + " Explain your reasoning step by step.")
    return prompts


def concept_prompts() -> list[str]:
    import sys
    from pydoc_data.topics import topics

    prompts = [f"Explain the Python language topic '{t}' with a short example." for t in sorted(topics)]
    prompts += [
        f"What is the Python standard library module `{m}` used for? Show a short example."
        for m in sorted(sys.stdlib_module_names)
        if not m.startswith("_")
    ]
    return prompts


def _bare_stdlib_completions() -> list[str]:
    """``import m`` + a function or method header with its full docstring, nothing else."""
    prompts = []
    for module_name, qualname, signature, doc in _stdlib_callables():
        if len(doc) > 1500:
            continue
        doc = textwrap.indent(doc.replace('"""', "'''"), "    ").lstrip()
        name = qualname.split(".")[-1]
        prompts.append(f'import {module_name}\n\n\ndef {name}{signature}:\n    """ {doc}\n    """\n')
    return prompts


# Third-party packages for ``package-completions``: (package or module to walk, import line).
_PACKAGE_ROOTS = (
    ("networkx.algorithms", "import networkx as nx"),
    ("networkx.generators", "import networkx as nx"),
    ("sympy.ntheory", "import sympy"),
    ("sympy.utilities.iterables", "import sympy"),
)
# A numpydoc or sympy section header: a title line underlined with - or =.
_DOC_SECTION = re.compile(r"^(\w[\w ]*)\n(?:-{3,}|={3,})\s*$", re.MULTILINE)


def _package_modules(root: str) -> Iterator[object]:
    """``root`` and, for a package, its importable submodules other than tests, in name order."""
    import pkgutil

    module = importlib.import_module(root)
    yield module
    names = [info.name for info in pkgutil.walk_packages(getattr(module, "__path__", []), root + ".")]
    for name in sorted(names):
        if ".tests" in name or ".test_" in name:
            continue
        try:
            yield importlib.import_module(name)
        except Exception:  # an optional dependency missing here: the module is skipped
            continue


def _summary_and_examples(doc: str, max_example_lines: int = 12) -> tuple[str, str]:
    """A numpydoc / sympy docstring's text before its first section, and its Examples section's
    first ``max_example_lines`` lines (empty when it has none)."""
    sections = list(_DOC_SECTION.finditer(doc))
    summary = doc[: sections[0].start()].strip() if sections else doc.strip()
    for i, match in enumerate(sections):
        if match.group(1).strip().lower() == "examples":
            end = sections[i + 1].start() if i + 1 < len(sections) else len(doc)
            lines = doc[match.end() : end].strip("\n").splitlines()[:max_example_lines]
            return summary, "\n".join(lines).rstrip()
    return summary, ""


def _completion_prompt(name: str, fn, import_line: str, max_chars: int) -> str | None:
    """A HumanEval-shaped prompt for a documented function ``fn`` under ``name``: the import, the
    header, and a docstring of the summary and the ``>>>`` examples; None when it has no stable
    signature or docstring, or the prompt is longer than ``max_chars`` or not valid Python."""
    documented = _documented_signature(fn)
    if documented is None:
        return None
    signature, doc = documented
    # networkx's dispatcher adds its backend parameters to every public signature.
    signature = signature.replace("(*, backend=None, **backend_kwargs)", "()")
    signature = signature.replace(", *, backend=None, **backend_kwargs", "")
    signature = signature.replace(", backend=None, **backend_kwargs", "")
    summary, examples = _summary_and_examples(doc.replace('"""', "'''"))
    body = summary + ("\n\n" + examples if examples else "")
    body = textwrap.indent(body, "    ").lstrip()
    prompt = f'{import_line}\n\n\ndef {name}{signature}:\n    """ {body}\n    """\n'
    return prompt if len(prompt) <= max_chars and _parses(prompt) else None


def parse_python(source: str) -> ast.Module:
    """``ast.parse(source)``, quiet about a docstring's ``\\x`` that is not an escape: still valid
    Python, warned about as a DeprecationWarning up to 3.11 and a SyntaxWarning since 3.12."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source)


def _parses(source: str) -> bool:
    """Whether ``source`` is valid Python."""
    try:
        parse_python(source)
    except SyntaxError:
        return False
    return True


def package_completion_prompts(max_chars: int = 1500) -> list[str]:
    """HumanEval-shaped prompts (:func:`_completion_prompt`) from documented functions of
    third-party packages (``_PACKAGE_ROOTS``, walked with their submodules)."""
    prompts: list[str] = []
    seen: set[object] = set()
    for root, import_line in _PACKAGE_ROOTS:
        try:
            modules = list(_package_modules(root))
        except ImportError:  # the package is not installed here
            continue
        for module in modules:
            prompts += _module_prompts(
                module, import_line, lambda fn, m=module: fn.__module__ == m.__name__, seen, max_chars
            )
    return prompts


def _module_prompts(
    module, import_line: str, owned: Callable[[object], bool], seen: set[object], max_chars: int
) -> list[str]:
    """:func:`_completion_prompt` of each public function of ``module`` that ``owned`` accepts and
    ``seen`` does not hold yet (added to it), in name order."""
    prompts = []
    for name, fn in sorted(vars(module).items()):
        if name.startswith("_") or not inspect.isfunction(fn) or fn in seen or not owned(fn):
            continue
        seen.add(fn)
        prompt = _completion_prompt(name, fn, import_line, max_chars)
        if prompt is not None:
            prompts.append(prompt)
    return prompts


# Public modules for ``library-completions``: (module, import line).  Not walked (importing every
# submodule of numpy runs f2py's command line); a function counts when the module defines it
# itself or in one of its private submodules (scipy.stats' live in scipy.stats._stats_py).
_LIBRARY_MODULES = (
    ("numpy", "import numpy as np"),
    ("numpy.linalg", "import numpy as np"),
    ("numpy.polynomial.polynomial", "from numpy.polynomial import polynomial as P"),
    ("scipy.stats", "from scipy import stats"),
    ("scipy.signal", "from scipy import signal"),
    ("scipy.optimize", "from scipy import optimize"),
    ("scipy.interpolate", "from scipy import interpolate"),
    ("scipy.linalg", "from scipy import linalg"),
    ("scipy.spatial.distance", "from scipy.spatial import distance"),
    ("scipy.ndimage", "from scipy import ndimage"),
    ("scipy.integrate", "from scipy import integrate"),
    ("scipy.special", "from scipy import special"),
    ("pandas", "import pandas as pd"),
)


def library_completion_prompts(max_chars: int = 1500) -> list[str]:
    """HumanEval-shaped prompts (:func:`_completion_prompt`) from the documented public functions of
    numpy, scipy and pandas (``_LIBRARY_MODULES``), in module and name order."""
    prompts: list[str] = []
    seen: set[object] = set()
    for module_name, import_line in _LIBRARY_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # the package is not installed here
            continue
        prompts += _module_prompts(
            module,
            import_line,
            lambda fn, m=module_name: (fn.__module__ or "").partition("._")[0] == m,
            seen,
            max_chars,
        )
    return prompts


def _is_prime(n: int) -> bool:
    """Whether ``n`` is a prime number (the doctest tasks' ``is_prime`` and the range tasks' filter)."""
    return n > 1 and all(n % d for d in range(2, math.isqrt(n) + 1))


# Small tasks for doctest-style prompts: (function names, typed signature, docstring sentence,
# reference implementation, argument maker).  The examples in each prompt come from running the
# implementation, so they are always right.
# fmt: off
_DOCTEST_TASKS = (
    (("running_max", "prefix_maxima"), "(numbers: List[int]) -> List[int]",
     "Return the largest value seen so far at every position of the list.",
     lambda xs: [max(xs[: i + 1]) for i in range(len(xs))],
     lambda r: (r.sample(range(-9, 30), r.randint(3, 6)),)),
    (("count_vowels", "vowel_count"), "(text: str) -> int",
     "Count the vowels (a, e, i, o, u, either case) in the given string.",
     lambda t: sum(c in "aeiouAEIOU" for c in t), lambda r: (r.choice(_WORDS) + " " + r.choice(_WORDS),)),
    (("second_largest", "runner_up"), "(numbers: List[int]) -> int",
     "Return the second largest distinct value of a list with at least two distinct values.",
     lambda xs: sorted(set(xs))[-2], lambda r: (r.sample(range(0, 50), r.randint(3, 6)),)),
    (("is_sorted", "non_decreasing"), "(numbers: List[int]) -> bool",
     "Return True if the list is sorted in non-decreasing order, False otherwise.",
     lambda xs: xs == sorted(xs),
     lambda r: ((sorted if r.random() < 0.5 else list)(r.sample(range(20), 4)),)),
    (("digit_sum", "sum_of_digits"), "(n: int) -> int",
     "Return the sum of the decimal digits of a non-negative integer n.",
     lambda n: sum(_digits(n)), lambda r: (r.randint(0, 99999),)),
    (("capitalize_words", "title_words"), "(sentence: str) -> str",
     "Capitalize the first letter of every word in the sentence, words being separated by single spaces.",
     lambda s: " ".join(w[:1].upper() + w[1:] for w in s.split(" ")),
     lambda r: (" ".join(r.sample(_WORDS, 3)),)),
    (("count_evens", "even_count"), "(numbers: List[int]) -> int",
     "Return how many numbers in the list are even.",
     lambda xs: sum(x % 2 == 0 for x in xs), lambda r: (r.sample(range(-10, 40), r.randint(3, 7)),)),
    (("remove_char", "strip_letter"), "(text: str, char: str) -> str",
     "Return the text with every occurrence of char removed.",
     lambda t, c: t.replace(c, ""), lambda r: ((w := r.choice(_WORDS)), r.choice(w))),
    (("pairwise_sums", "adjacent_sums"), "(numbers: List[int]) -> List[int]",
     "Return the sums of each pair of neighbouring elements.",
     lambda xs: [a + b for a, b in zip(xs, xs[1:])], lambda r: (r.sample(range(-5, 20), r.randint(3, 6)),)),
    (("longest_word", "first_longest_word"), "(words: List[str]) -> str",
     "Return the longest word of a non-empty list; the first one if several are equally long.",
     lambda ws: max(ws, key=len), lambda r: (r.sample(_WORDS, r.randint(2, 5)),)),
    (("gcd_of_list", "common_divisor"), "(numbers: List[int]) -> int",
     "Return the greatest common divisor of a non-empty list of positive integers.",
     lambda xs: math.gcd(*xs),
     lambda r: ([r.choice((2, 3, 4, 6)) * r.randint(1, 12) for _ in range(3)],)),
    (("alternate_case", "swap_every_other"), "(text: str) -> str",
     "Upper-case the characters at even indices and lower-case those at odd indices.",
     lambda t: "".join(c.upper() if i % 2 == 0 else c.lower() for i, c in enumerate(t)),
     lambda r: (r.choice(_WORDS),)),
    (("count_above", "how_many_greater"), "(numbers: List[float], threshold: float) -> int",
     "Return how many numbers are strictly greater than threshold.",
     lambda xs, t: sum(x > t for x in xs),
     lambda r: ([round(r.uniform(0, 10), 1) for _ in range(4)], float(r.randint(2, 8)))),
    (("unique_sorted", "distinct_values"), "(numbers: List[int]) -> List[int]",
     "Return the distinct values of the list in increasing order.",
     lambda xs: sorted(set(xs)), lambda r: ([r.randint(0, 9) for _ in range(r.randint(4, 8))],)),
    (("reverse_words", "words_backwards"), "(sentence: str) -> str",
     "Return the sentence with the order of its space-separated words reversed.",
     lambda s: " ".join(reversed(s.split())), lambda r: (" ".join(r.sample(_WORDS, r.randint(2, 4))),)),
    (("is_prime", "prime_check"), "(n: int) -> bool",
     "Return True if n is a prime number, False otherwise.",
     _is_prime, lambda r: (r.randint(1, 60),)),
    (("char_frequency", "letter_counts"), "(text: str) -> Dict[str, int]",
     "Return a dictionary mapping each character of the text to how often it occurs.",
     lambda t: {c: t.count(c) for c in dict.fromkeys(t)}, lambda r: (r.choice(_WORDS)[:5],)),
    (("merge_sorted", "combine_sorted"), "(a: List[int], b: List[int]) -> List[int]",
     "Merge two sorted lists into one sorted list.",
     lambda a, b: sorted(a + b), lambda r: (sorted(r.sample(range(20), 3)), sorted(r.sample(range(20), 2)))),
    (("product_except_self", "products_of_others"), "(numbers: List[int]) -> List[int]",
     "Return a list whose i-th item is the product of all numbers except the i-th.",
     lambda xs: [math.prod(xs[:i] + xs[i + 1 :]) for i in range(len(xs))],
     lambda r: (r.sample(range(1, 7), 3),)),
    (("fizzbuzz_word", "fizz_or_buzz"), "(n: int) -> str",
     "Return 'Fizz' if n is divisible by 3, 'Buzz' if by 5, 'FizzBuzz' if by both, else str(n).",
     lambda n: "FizzBuzz" if n % 15 == 0 else "Fizz" if n % 3 == 0 else "Buzz" if n % 5 == 0 else str(n),
     lambda r: (r.randint(1, 45),)),
    (("mean_absolute_difference", "average_gap"), "(a: List[float], b: List[float]) -> float",
     "Return the mean of the absolute differences between corresponding items of two equally long lists.",
     lambda a, b: sum(abs(x - y) for x, y in zip(a, b)) / len(a),
     lambda r: tuple([float(r.randint(0, 9)) for _ in range(2)] for _ in range(2))),
    (("nested_depth", "max_paren_depth"), "(parens: str) -> int",
     "Return the deepest nesting level of a balanced string of parentheses.",
     lambda s: max(itertools.accumulate(1 if c == "(" else -1 for c in s)),
     lambda r: (r.choice(("()", "(())", "()(())", "((()))", "(()())()")),)),
    (("rotate_left", "shift_left"), "(items: List[int], k: int) -> List[int]",
     "Rotate the list k positions to the left.",
     lambda xs, k: xs[k % len(xs):] + xs[: k % len(xs)], lambda r: (r.sample(range(10), 5), r.randint(1, 4))),
    (("starts_with_count", "prefix_count"), "(words: List[str], prefix: str) -> int",
     "Return how many words start with the given prefix.",
     lambda ws, p: sum(w.startswith(p) for w in ws),
     lambda r: ((ws := r.sample(_WORDS, 4)), r.choice(ws)[:1])),
)
_WORDS = ("apple", "river", "stone", "pencil", "garden", "window", "silver", "planet", "orange", "music",
          "tiger", "cloud", "bridge", "yellow", "forest", "candle", "rocket", "island", "winter", "ocean")
# fmt: on


def _typed_doctest_prompt(
    name: str, signature: str, sentence: str, implementation: Callable, examples: Sequence[tuple]
) -> str:
    """A HumanEval-shaped prompt: the typing import its signature needs, the header, a docstring with
    ``sentence`` and one ``>>>`` example per argument tuple, its result computed by ``implementation``."""
    calls = [
        f"    >>> {name}({', '.join(map(repr, args))})\n    {implementation(*args)!r}" for args in examples
    ]
    imports = [t for t in ("Dict", "List", "Optional", "Tuple") if f"{t}[" in signature]
    header = f"from typing import {', '.join(imports)}\n\n\n" if imports else ""
    return f'{header}def {name}{signature}:\n    """ {sentence}\n' + "\n".join(calls) + '\n    """\n'


def _doctest_prompts(seed: int) -> list[str]:
    """HumanEval-shaped prompts: typing import, header, docstring and ``>>>`` examples that are right."""
    rng = random.Random(seed)
    prompts = []
    for names, signature, sentence, implementation, make_args in _DOCTEST_TASKS:
        for variant in range(6):
            examples = [make_args(rng) for _ in range(rng.randint(2, 3))]
            prompts.append(
                _typed_doctest_prompt(names[variant % 2], signature, sentence, implementation, examples)
            )
    return list(dict.fromkeys(prompts))


def code_completion_prompts(seed: int = 0) -> list[str]:
    """Bare code to continue (HumanEval's shape): stdlib headers with docstrings, doctest tasks."""
    return _bare_stdlib_completions() + _doctest_prompts(seed)


# HumanEval-shaped tasks composed from parts (``composed-functions``): a filter, a per-item change
# and a summary over a list, each a phrase of the docstring and a piece of the reference
# implementation, so the pool is every combination (hundreds of distinct tasks, examples always right).
# fmt: off
_NUMBER_FILTERS = (  # (name part, noun phrase, keep)
    ("even", "the even numbers in the list", lambda x: x % 2 == 0),
    ("odd", "the odd numbers in the list", lambda x: x % 2 == 1),
    ("positive", "the positive numbers in the list", lambda x: x > 0),
    ("negative", "the negative numbers in the list", lambda x: x < 0),
    ("nonzero", "the numbers in the list that are not zero", lambda x: x != 0),
    ("triple", "the multiples of three in the list", lambda x: x % 3 == 0),
    ("small", "the numbers in the list between -9 and 9 inclusive", lambda x: -9 <= x <= 9),
    ("two_digit", "the numbers in the list with exactly two digits, ignoring the sign",
     lambda x: 10 <= abs(x) <= 99),
    ("above_ten", "the numbers in the list greater than 10", lambda x: x > 10),
    ("all", "all the numbers in the list", lambda x: True),
)
_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, change)
    ("", "{}", lambda x: x),
    ("squared", "the squares of {}", lambda x: x * x),
    ("doubled", "twice each of {}", lambda x: 2 * x),
    ("absolute", "the absolute values of {}", abs),
    ("incremented", "{}, each increased by one", lambda x: x + 1),
    ("halved", "{}, each divided by two and rounded down", lambda x: x // 2),
    ("negated", "the negations of {}", lambda x: -x),
    ("last_digit", "the last decimal digits of {}", lambda x: abs(x) % 10),
)
_NUMBER_SUMMARIES = (  # (name part, sentence, return annotation, summary of the changed items)
    ("sum", "Return the sum of {} (0 if there are none).", "int", sum),
    ("product", "Return the product of {} (1 if there are none).", "int", math.prod),
    ("largest", "Return the largest of {}, or None if there are none.", "Optional[int]",
     lambda xs: max(xs, default=None)),
    ("smallest", "Return the smallest of {}, or None if there are none.", "Optional[int]",
     lambda xs: min(xs, default=None)),
    ("list", "Return a list of {}, in their original order.", "List[int]", list),
    ("descending", "Return {} sorted from largest to smallest.", "List[int]",
     lambda xs: sorted(xs, reverse=True)),
    ("distinct", "Return the distinct values among {} in increasing order.", "List[int]",
     lambda xs: sorted(set(xs))),
    ("count_distinct", "Return how many different values there are among {}.", "int",
     lambda xs: len(set(xs))),
    ("mean", "Return the average of {} rounded to two decimals, or 0.0 if there are none.", "float",
     lambda xs: round(sum(xs) / len(xs), 2) if xs else 0.0),
)
_WORD_FILTERS = (
    ("vowel_initial", "the words that start with a vowel", lambda w: w[0] in "aeiou"),
    ("long", "the words longer than five letters", lambda w: len(w) > 5),
    ("short", "the words of at most four letters", lambda w: len(w) <= 4),
    ("palindrome", "the words that read the same backwards", lambda w: w == w[::-1]),
    ("with_e", "the words that contain the letter 'e'", lambda w: "e" in w),
    ("plural", "the words that end with 's'", lambda w: w.endswith("s")),
    ("every", "all the words", lambda w: True),
)
_WORD_CHANGES = (
    ("", "{}", lambda w: w),
    ("upper", "{}, in upper case", str.upper),
    ("reversed", "{}, each spelled backwards", lambda w: w[::-1]),
    ("initial", "the first letters of {}", lambda w: w[0]),
    ("capitalized", "{}, each with its first letter capitalized", str.capitalize),
    ("ending", "the last two letters of {}", lambda w: w[-2:]),
)
_WORD_SUMMARIES = (
    ("list", "Return a list of {}, in their original order.", "List[str]", list),
    ("joined", "Return {} joined by single spaces ('' if there are none).", "str", " ".join),
    ("alphabetical", "Return {} sorted alphabetically.", "List[str]", sorted),
    ("longest", "Return the longest of {}; the first one if several are equally long, "
     "or None if there are none.", "Optional[str]", lambda ws: max(ws, key=len, default=None)),
    ("count", "Return how many of {} there are.", "int", len),
)
_LIST_WORDS = _WORDS + ("level", "noon", "radar", "kayak", "ideas", "owls", "eggs", "umbrella", "sky", "cats")
# fmt: on


def _summaries_replacing(summaries: tuple[tuple, ...], *replacements: tuple[str, tuple]) -> tuple[tuple, ...]:
    """``summaries`` with each (name, summary) of ``replacements`` in place of the summary of that name."""
    by_name = dict(replacements)
    return tuple(by_name.get(summary[0], summary) for summary in summaries)


def _word_summaries_joined_by(separator: str, separator_name: str) -> tuple[tuple, ...]:
    """The word summaries with their ``joined`` summary joining by ``separator`` instead of spaces."""
    joined = (
        "joined",
        f"Return {{}} joined by {separator_name} ('' if there are none).",
        "str",
        separator.join,
    )
    return _summaries_replacing(_WORD_SUMMARIES, ("joined", joined))


# The word summaries joined by commas: the text-list tasks' summaries (fields, paths, identifiers,
# emails, people; ordered by a key in :func:`_comma_summaries_ordered_by`).
_COMMA_WORD_SUMMARIES = _word_summaries_joined_by(",", "commas")


def _comma_summaries_ordered_by(
    key: Callable[[str], object], sorted_sentence: str, greatest: tuple[str, str]
) -> tuple[tuple, ...]:
    """The word summaries joined by commas, their alphabetical and longest ones replaced by ones that
    order by ``key``: ``sorted`` (``sorted_sentence``) and ``greatest`` (its name part and sentence:
    the item greatest by ``key``, or None)."""
    greatest_name, greatest_sentence = greatest
    sorted_summary = ("sorted", sorted_sentence, "List[str]", lambda items: sorted(items, key=key))
    greatest_summary = (
        greatest_name,
        greatest_sentence,
        "Optional[str]",
        lambda items: max(items, key=key, default=None),
    )
    return _summaries_replacing(
        _COMMA_WORD_SUMMARIES,
        ("alphabetical", sorted_summary),
        ("longest", greatest_summary),
    )


def _distinct_texts(rng: random.Random, draw: Callable[[random.Random], str]) -> tuple[list[str]]:
    """3-6 texts from ``draw``, a repeat dropped (so that a greatest one is one text, whichever of
    equal ones a solution picks): the whole argument tuple of the text-list tasks' examples."""
    return (list(dict.fromkeys(draw(rng) for _ in range(rng.randint(3, 6)))),)


def _composed_task(
    filter_: tuple,
    change: tuple,
    summary: tuple,
    argument: str,
    argument_type: str,
    bound: str = "",
    positional: bool = False,
    items_of: Callable[..., Iterable] | None = None,
) -> tuple[str, str, str, Callable]:
    """A composed task: its function name, signature tail, docstring sentence and implementation.

    ``bound`` adds parameters after the list (``", k: int"``); the implementation passes their values
    to the filter after the item.  A ``positional`` filter is asked ``keep(index, item, items)``
    instead (where an item stands in the list, or how it compares with its neighbours).
    ``items_of`` turns the arguments into the items (an integer into its digits, two lists into the
    pairs of their numbers at the same position); the filter then sees the item alone."""
    filter_name, noun, keep = filter_
    change_name, phrase, apply = change
    summary_name, sentence, returns, summarize = summary
    name = "_".join(part for part in (summary_name, change_name, filter_name) if part)
    signature = f"({argument}: {argument_type}{bound}) -> {returns}"

    def implementation(*arguments):
        if items_of is not None:
            return summarize([apply(item) for item in items_of(*arguments) if keep(item)])
        items, *bound_values = arguments
        if positional:
            return summarize([apply(item) for i, item in enumerate(items) if keep(i, item, items)])
        return summarize([apply(item) for item in items if keep(item, *bound_values)])

    return name, signature, sentence.format(phrase.format(noun)), implementation


def _composed_prompts(
    rng: random.Random,
    parts: tuple[Sequence[tuple], Sequence[tuple], Sequence[tuple]],
    argument: str,
    argument_type: str,
    make_call: Callable[[random.Random], tuple],
    bound: str = "",
    positional: bool = False,
    items_of: Callable[..., Iterable] | None = None,
) -> list[str]:
    """One prompt per filter x change x summary of ``parts``, each with 2-3 examples whose arguments
    ``make_call`` draws from ``rng`` (``positional``, ``items_of``: see :func:`_composed_task`).

    Every combination's sentence (and name) is its own, so the prompts never repeat."""
    prompts = []
    for filter_, change, summary in itertools.product(*parts):
        if summary[0] == "count" and change[0]:  # a count is the same whatever the items become
            continue
        name, signature, sentence, implementation = _composed_task(
            filter_, change, summary, argument, argument_type, bound, positional, items_of
        )
        calls = [make_call(rng) for _ in range(rng.randint(2, 3))]
        prompts.append(_typed_doctest_prompt(name, signature, sentence, implementation, calls))
    return prompts


def _number_and_item_prompts(
    rng: random.Random,
    filters: Sequence[tuple],
    number_changes: Sequence[tuple],
    item_changes: Sequence[tuple],
    item_summaries: Sequence[tuple],
    argument: str,
    argument_type: str,
    make_call: Callable[[random.Random], tuple],
    items_of: Callable[..., Iterable],
    bound: str = "",
) -> list[str]:
    """The composed tasks over the arguments' items, twice from one ``rng``: every filter with the
    number changes and the number summaries, then with the item changes and ``item_summaries``
    (``bound``: the parameters after the first, as :func:`_composed_task` takes them)."""
    prompts = []
    for changes, summaries in ((number_changes, _NUMBER_SUMMARIES), (item_changes, item_summaries)):
        parts = (filters, changes, summaries)
        prompts += _composed_prompts(rng, parts, argument, argument_type, make_call, bound, items_of=items_of)
    return prompts


def _distinct_draws(rng: random.Random, count: int, draw: Callable[[random.Random], _Drawn]) -> list[_Drawn]:
    """``count`` distinct values of ``draw(rng)`` in the order first drawn (repeats drawn again)."""
    values: list[_Drawn] = []
    while len(values) < count:
        value = draw(rng)
        if value not in values:
            values.append(value)
    return values


def _distinct_item_prompts(
    seed: int, parts: tuple, argument: str, argument_type: str, draw_item: Callable[[random.Random], _Drawn]
) -> list[str]:
    """:func:`_number_and_item_prompts` from ``random.Random(seed)`` with ``parts`` (filters, number
    changes, item changes, item summaries) over ``argument``, a list of items: 3-5 distinct
    ``draw_item`` draws in every example (the point, card, chess and note tasks)."""

    def arguments(rng: random.Random) -> tuple[list[_Drawn]]:
        return (_distinct_draws(rng, rng.randint(3, 5), draw_item),)

    return _number_and_item_prompts(random.Random(seed), *parts, argument, argument_type, arguments, iter)


def _number_list(rng: random.Random) -> list[int]:
    """4-7 distinct numbers from -20 to 39: the list argument of the number tasks' examples."""
    return rng.sample(range(-20, 40), rng.randint(4, 7))


def _numbers_argument(rng: random.Random) -> tuple[list[int]]:
    """One :func:`_number_list`: the whole argument tuple of the one-list number tasks' examples."""
    return (_number_list(rng),)


def composed_function_prompts(seed: int = 0) -> list[str]:
    """Every filter x change x summary task over a list of numbers or of words, with 2-3 examples each."""
    rng = random.Random(seed + 23)
    numbers = (_NUMBER_FILTERS, _NUMBER_CHANGES, _NUMBER_SUMMARIES)
    words = (_WORD_FILTERS, _WORD_CHANGES, _WORD_SUMMARIES)
    prompts = _composed_prompts(rng, numbers, "numbers", "List[int]", _numbers_argument)
    prompts += _composed_prompts(
        rng, words, "words", "List[str]", lambda r: (r.sample(_LIST_WORDS, r.randint(3, 5)),)
    )
    return prompts


# HumanEval-shaped tasks that return two values (``tuple-functions``): the composed number tasks'
# filters and changes with summaries that make a tuple (HumanEval's ``sum_product`` shape).
# fmt: off
_TUPLE_SUMMARIES = (  # (name part, sentence, return annotation, summary of the changed items)
    ("count_and_sum", "Return a tuple of how many of {} there are and their sum.", "Tuple[int, int]",
     lambda xs: (len(xs), sum(xs))),
    ("sum_and_product", "Return a tuple of the sum and the product of {} (0 and 1 if there are none).",
     "Tuple[int, int]", lambda xs: (sum(xs), math.prod(xs))),
    ("smallest_and_largest", "Return a tuple of the smallest and the largest of {}, or None if there "
     "are none.", "Optional[Tuple[int, int]]", lambda xs: (min(xs), max(xs)) if xs else None),
    ("first_and_last", "Return a tuple of the first and the last of {}, or None if there are none.",
     "Optional[Tuple[int, int]]", lambda xs: (xs[0], xs[-1]) if xs else None),
)
# fmt: on


def tuple_function_prompts(seed: int = 0) -> list[str]:
    """Every number filter x change x tuple summary task over a list of numbers, with 2-3 examples each."""
    parts = (_NUMBER_FILTERS, _NUMBER_CHANGES, _TUPLE_SUMMARIES)
    return _composed_prompts(random.Random(seed + 101), parts, "numbers", "List[int]", _numbers_argument)


# HumanEval-shaped tasks over two strings read position by position (``string-pair-functions``,
# HumanEval's ``string_xor`` shape): a filter over the character pairs (a[i], b[i]), a change that
# makes a number (a code point, the distance between the two) or a character of each kept pair and
# a character summary, composed as the list tasks are.
# fmt: off
_CHARACTER_PAIR_FILTERS = (  # (name part, noun phrase, keep((x, y)))
    ("matching", "the character pairs (a[i], b[i]) with a[i] == b[i]", lambda p: p[0] == p[1]),
    ("differing", "the character pairs (a[i], b[i]) with a[i] != b[i]", lambda p: p[0] != p[1]),
    ("first_later", "the character pairs (a[i], b[i]) with a[i] > b[i]", lambda p: p[0] > p[1]),
    ("letter_pairs", "the character pairs (a[i], b[i]) that are both letters",
     lambda p: p[0].isalpha() and p[1].isalpha()),
    ("digit_pairs", "the character pairs (a[i], b[i]) with a digit on either side",
     lambda p: p[0].isdigit() or p[1].isdigit()),
    ("char_pairs", "all the character pairs (a[i], b[i])", lambda p: True),
)
_CHARACTER_PAIR_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, pair -> number)
    ("code_gaps", "the distances between the Unicode code points of a[i] and b[i] in {}",
     lambda p: abs(ord(p[0]) - ord(p[1]))),
    ("codes", "the Unicode code points of a[i] in {}", lambda p: ord(p[0])),
)
_CHARACTER_PAIR_CHANGES = (  # (name part, phrase around the filtered noun phrase, pair -> character)
    ("", "the characters a[i] of {}", lambda p: p[0]),
    ("b_chars", "the characters b[i] of {}", lambda p: p[1]),
    ("later_chars", "the later character in Unicode order of each of {}", max),
    ("earlier_chars", "the earlier character in Unicode order of each of {}", min),
    ("upper_chars", "the characters a[i] of {}, in upper case", lambda p: p[0].upper()),
)
_PAIR_STRING_CHARACTERS = "abcdeXYZ019"
# fmt: on


def _character_pair_strings(rng: random.Random) -> tuple[str, str]:
    """Two strings of 4-8 characters from ``_PAIR_STRING_CHARACTERS``, of one length; about a third
    of b repeats a at the same position, so that the matching pairs' tasks keep some."""
    a = "".join(rng.choices(_PAIR_STRING_CHARACTERS, k=rng.randint(4, 8)))
    return a, "".join(c if rng.random() < 0.35 else rng.choice(_PAIR_STRING_CHARACTERS) for c in a)


def string_pair_function_prompts(seed: int = 0) -> list[str]:
    """Every character pair filter x change x summary task over ``(a, b)``, two strings of one length,
    with 2-3 examples each: the number changes with the number summaries, the character changes with
    the character summaries."""
    parts = (
        _CHARACTER_PAIR_FILTERS,
        _CHARACTER_PAIR_NUMBER_CHANGES,
        _CHARACTER_PAIR_CHANGES,
        _CHARACTER_SUMMARIES,
    )
    rng = random.Random(seed + 103)
    return _number_and_item_prompts(rng, *parts, "a", "str", _character_pair_strings, zip, ", b: str")


# HumanEval-shaped tasks with a second argument (``threshold-functions``): the composed tasks'
# changes and summaries over the numbers that relate to ``k`` (greater, divisible, within ...).
# fmt: off
_THRESHOLD_FILTERS = (  # (name part, noun phrase, keep(x, k))
    ("above_k", "the numbers in the list greater than k", lambda x, k: x > k),
    ("below_k", "the numbers in the list less than k", lambda x, k: x < k),
    ("at_least_k", "the numbers in the list that are at least k", lambda x, k: x >= k),
    ("at_most_k", "the numbers in the list that are at most k", lambda x, k: x <= k),
    ("multiple_of_k", "the numbers in the list divisible by k", lambda x, k: x % k == 0),
    ("not_multiple_of_k", "the numbers in the list not divisible by k", lambda x, k: x % k != 0),
    ("within_k", "the numbers in the list whose absolute value is at most k", lambda x, k: abs(x) <= k),
    ("beyond_k", "the numbers in the list whose absolute value is greater than k", lambda x, k: abs(x) > k),
)
# fmt: on


def threshold_function_prompts(seed: int = 0) -> list[str]:
    """Every threshold filter x change x summary task over ``(numbers, k)``, with 2-3 examples each."""
    parts = (_THRESHOLD_FILTERS, _NUMBER_CHANGES, _NUMBER_SUMMARIES)
    return _composed_prompts(
        random.Random(seed + 29),
        parts,
        "numbers",
        "List[int]",
        lambda r: (_number_list(r), r.randint(2, 12)),
        ", k: int",
    )


# HumanEval-shaped tasks over where numbers stand in a list (``position-functions``): the composed
# tasks' changes and summaries over the numbers kept by their index or by their neighbours.
# fmt: off
_POSITION_FILTERS = (  # (name part, noun phrase, keep(index, x, numbers))
    ("even_index", "the numbers at even positions of the list, counting from 0",
     lambda i, x, xs: i % 2 == 0),
    ("odd_index", "the numbers at odd positions of the list, counting from 0",
     lambda i, x, xs: i % 2 == 1),
    ("rising", "the numbers in the list greater than the number just before them",
     lambda i, x, xs: i > 0 and x > xs[i - 1]),
    ("falling", "the numbers in the list less than the number just before them",
     lambda i, x, xs: i > 0 and x < xs[i - 1]),
    ("peak", "the numbers in the list greater than each of their neighbours",
     lambda i, x, xs: all(x > xs[j] for j in (i - 1, i + 1) if 0 <= j < len(xs))),
    ("above_first", "the numbers in the list greater than its first number",
     lambda i, x, xs: x > xs[0]),
    ("first_half", "the numbers in the first half of the list, with the middle one of an odd length",
     lambda i, x, xs: i < (len(xs) + 1) // 2),
    ("record", "the numbers in the list greater than every number before them",
     lambda i, x, xs: all(x > y for y in xs[:i])),
)
# fmt: on


def position_function_prompts(seed: int = 0) -> list[str]:
    """Every position filter x change x summary task over ``numbers``, with 2-3 examples each."""
    parts = (_POSITION_FILTERS, _NUMBER_CHANGES, _NUMBER_SUMMARIES)
    rng = random.Random(seed + 61)
    return _composed_prompts(rng, parts, "numbers", "List[int]", _numbers_argument, positional=True)


# HumanEval-shaped tasks over the decimal digits of a number (``digit-functions``): a digit filter,
# a per-digit change and a summary, composed as the list tasks are.
# fmt: off
_DIGIT_FILTERS = (  # (name part, noun phrase, keep)
    ("even_digits", "the even digits of n", lambda d: d % 2 == 0),
    ("odd_digits", "the odd digits of n", lambda d: d % 2 == 1),
    ("nonzero_digits", "the digits of n that are not zero", lambda d: d != 0),
    ("large_digits", "the digits of n greater than 4", lambda d: d > 4),
    ("small_digits", "the digits of n less than 5", lambda d: d < 5),
    ("prime_digits", "the digits of n that are prime (2, 3, 5 and 7)", lambda d: d in (2, 3, 5, 7)),
    ("digits", "all the digits of n", lambda d: True),
)
_DIGIT_CHANGES = (  # (name part, phrase around the filtered noun phrase, change)
    ("", "{}", lambda d: d),
    ("squared", "the squares of {}", lambda d: d * d),
    ("cubed", "the cubes of {}", lambda d: d**3),
    ("doubled", "twice each of {}", lambda d: 2 * d),
    ("incremented", "{}, each increased by one", lambda d: d + 1),
    ("complemented", "nine minus each of {}", lambda d: 9 - d),
    ("halved", "{}, each divided by two and rounded down", lambda d: d // 2),
)
_DIGIT_SUMMARIES = (*_NUMBER_SUMMARIES,  # (name part, sentence, return annotation, summary)
    ("count", "Return how many of {} there are.", "int", len),
    ("concatenated", "Return {}, written one after another as a string in their order in n ('' if "
     "there are none).", "str", lambda ds: "".join(map(str, ds))),
)
# fmt: on


def _digits(n: int) -> list[int]:
    """The decimal digits of a non-negative ``n``, most significant first."""
    return [int(d) for d in str(n)]


def digit_function_prompts(seed: int = 0) -> list[str]:
    """Every digit filter x change x summary task over ``n: int``, with 2-3 examples each (n of 3-7
    digits, so that most filters keep some)."""
    parts = (_DIGIT_FILTERS, _DIGIT_CHANGES, _DIGIT_SUMMARIES)
    return _composed_prompts(
        random.Random(seed + 67),
        parts,
        "n",
        "int",
        lambda r: (r.randint(100, 9_999_999),),
        items_of=_digits,
    )


# HumanEval-shaped tasks over number words (``number-word-functions``, HumanEval's ``sort_numbers``
# shape): ``text`` is words from 'zero' to 'nine' separated by spaces; a filter over the numbers the
# words name, a change that makes a number (the value, its square, ...) or a word (in upper case,
# capitalised) of each kept word and a summary, composed as the list tasks are.
# fmt: off
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_NUMBER_WORD_FILTERS = (  # (name part, noun phrase, keep(word))
    ("even_words", "the words of the text that name an even number", lambda w: _word_value(w) % 2 == 0),
    ("odd_words", "the words of the text that name an odd number", lambda w: _word_value(w) % 2 == 1),
    ("nonzero_words", "the words of the text other than 'zero'", lambda w: w != "zero"),
    ("large_words", "the words of the text that name a number greater than 4", lambda w: _word_value(w) > 4),
    ("small_words", "the words of the text that name a number less than 5", lambda w: _word_value(w) < 5),
    ("prime_words", "the words of the text that name a prime number (two, three, five or seven)",
     lambda w: _word_value(w) in (2, 3, 5, 7)),
    ("words", "all the words of the text", lambda w: True),
)
_NUMBER_WORD_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, word -> number)
    ("values", "the numbers named by {}", lambda w: _word_value(w)),
    ("squared_values", "the squares of the numbers named by {}", lambda w: _word_value(w) ** 2),
    ("doubled_values", "twice the numbers named by {}", lambda w: 2 * _word_value(w)),
    ("complements", "nine minus each of the numbers named by {}", lambda w: 9 - _word_value(w)),
)
_NUMBER_WORD_CHANGES = (  # (name part, phrase around the filtered noun phrase, word -> word)
    ("", "{}", lambda w: w),
    ("upper", "{}, in upper case", str.upper),
    ("capitalized", "{}, each with a capital first letter", str.capitalize),
)
_NUMBER_WORD_SUMMARIES = (*_WORD_SUMMARIES,  # (name part, sentence, return annotation, summary)
    ("by_value", "Return {}, ordered from the smallest number they name to the largest and joined "
     "by single spaces.", "str", lambda ws: " ".join(sorted(ws, key=_word_value))),
)
# fmt: on


def _word_value(word: str) -> int:
    """The number a number word names, whatever its case ('Three' -> 3)."""
    return _NUMBER_WORDS.index(word.lower())


def _number_words(rng: random.Random) -> tuple[str]:
    """3-7 number words (repeats allowed) joined by single spaces: the tasks' example argument."""
    return (" ".join(rng.choices(_NUMBER_WORDS, k=rng.randint(3, 7))),)


def number_word_function_prompts(seed: int = 0) -> list[str]:
    """Every number-word filter x change x summary task over ``text: str``, with 2-3 examples each:
    the number changes with the number summaries, the word changes with the word summaries."""
    parts = (_NUMBER_WORD_FILTERS, _NUMBER_WORD_NUMBER_CHANGES, _NUMBER_WORD_CHANGES, _NUMBER_WORD_SUMMARIES)
    rng = random.Random(seed + 107)
    return _number_and_item_prompts(rng, *parts, "text", "str", _number_words, str.split)


def _interval_length(interval: tuple[int, int]) -> int:
    """An interval's length, end - start (0 for a single point)."""
    return interval[1] - interval[0]


# HumanEval-shaped tasks over closed intervals (``interval-functions``, HumanEval's ``intersection``
# shape): ``intervals`` is a list of (start, end) pairs with start <= end; a filter over the
# intervals, a change that makes a number (the length, start, middle, ...) or an interval (as is,
# widened, moved) of each kept interval and a summary, composed as the list tasks are.
# fmt: off
_INTERVAL_FILTERS = (  # (name part, noun phrase, keep((start, end)))
    ("holding_zero", "the intervals that contain 0", lambda iv: iv[0] <= 0 <= iv[1]),
    ("long", "the intervals longer than 3 (end - start > 3)", lambda iv: _interval_length(iv) > 3),
    ("positive", "the intervals that start above 0", lambda iv: iv[0] > 0),
    ("negative", "the intervals that end below 0", lambda iv: iv[1] < 0),
    ("points", "the intervals whose start equals their end", lambda iv: iv[0] == iv[1]),
    ("even_start", "the intervals with an even start", lambda iv: iv[0] % 2 == 0),
    ("intervals", "all the intervals", lambda iv: True),
)
_INTERVAL_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, interval -> number)
    ("lengths", "the lengths (end - start) of {}", _interval_length),
    ("starts", "the starts of {}", lambda iv: iv[0]),
    ("ends", "the ends of {}", lambda iv: iv[1]),
    ("middles", "the middles (start + end) // 2 of {}", lambda iv: (iv[0] + iv[1]) // 2),
    ("integer_counts", "how many integers each of {} holds", lambda iv: _interval_length(iv) + 1),
)
_INTERVAL_CHANGES = (  # (name part, phrase around the filtered noun phrase, interval -> interval)
    ("", "{}", lambda iv: iv),
    ("widened", "{}, each widened by one at both ends", lambda iv: (iv[0] - 1, iv[1] + 1)),
    ("moved", "{}, each moved one to the right", lambda iv: (iv[0] + 1, iv[1] + 1)),
)
_INTERVAL_SUMMARIES = (  # (name part, sentence, return annotation, summary of the changed intervals)
    ("list", "Return a list of {}, in their original order.", "List[Tuple[int, int]]", list),
    ("sorted", "Return {}, sorted by their start, then by their end.", "List[Tuple[int, int]]", sorted),
    ("longest", "Return the longest of {}; the first one if several are equally long, or None if there "
     "are none.", "Optional[Tuple[int, int]]", lambda ivs: max(ivs, key=_interval_length, default=None)),
    ("span", "Return the smallest interval that covers all of {}, or None if there are none.",
     "Optional[Tuple[int, int]]",
     lambda ivs: (min(iv[0] for iv in ivs), max(iv[1] for iv in ivs)) if ivs else None),
    ("count", "Return how many of {} there are.", "int", len),
)
# fmt: on


def _intervals(rng: random.Random) -> tuple[list[tuple[int, int]]]:
    """3-6 intervals (start, end) with starts from -9 to 9 and lengths 0-7, a fifth of them single
    points: the tasks' example argument."""
    starts = [rng.randint(-9, 9) for _ in range(rng.randint(3, 6))]
    return ([(s, s if rng.random() < 0.2 else s + rng.randint(1, 7)) for s in starts],)


def interval_function_prompts(seed: int = 0) -> list[str]:
    """Every interval filter x change x summary task over ``intervals: List[Tuple[int, int]]``, with
    2-3 examples each: the number changes with the number summaries, the interval changes with the
    interval summaries."""
    parts = (_INTERVAL_FILTERS, _INTERVAL_NUMBER_CHANGES, _INTERVAL_CHANGES, _INTERVAL_SUMMARIES)
    rng = random.Random(seed + 109)
    return _number_and_item_prompts(rng, *parts, "intervals", "List[Tuple[int, int]]", _intervals, iter)


# HumanEval-shaped tasks over the numbers from 1 to n (``range-functions``, the shape of HumanEval's
# tasks on one integer: ``count_up_to``, ``fizz_buzz``, ``even_odd_palindrome``): a filter over the
# numbers 1..n, a change of each kept number and a number summary, composed as the list tasks are.
# fmt: off
_RANGE_FILTERS = (  # (name part, noun phrase, keep)
    ("even_to_n", "the even numbers from 1 to n", lambda x: x % 2 == 0),
    ("odd_to_n", "the odd numbers from 1 to n", lambda x: x % 2 == 1),
    ("triples_to_n", "the multiples of three from 1 to n", lambda x: x % 3 == 0),
    ("primes_to_n", "the prime numbers from 1 to n", _is_prime),
    ("squares_to_n", "the perfect squares from 1 to n", lambda x: math.isqrt(x) ** 2 == x),
    ("palindromes_to_n", "the numbers from 1 to n that read the same backwards",
     lambda x: str(x) == str(x)[::-1]),
    ("to_n", "the numbers from 1 to n", lambda x: True),
)
_RANGE_CHANGES = (  # (name part, phrase around the filtered noun phrase, change)
    ("", "{}", lambda x: x),
    ("squared", "the squares of {}", lambda x: x * x),
    ("doubled", "{}, each doubled", lambda x: 2 * x),
    ("digit_sums", "the digit sums of {}", lambda x: sum(_digits(x))),
    ("last_digits", "the last digits of {}", lambda x: x % 10),
    ("halved", "{}, each divided by two and rounded down", lambda x: x // 2),
)
# fmt: on


def _numbers_up_to(n: int) -> range:
    """The numbers from 1 to ``n``: the items of the range tasks."""
    return range(1, n + 1)


def range_function_prompts(seed: int = 0) -> list[str]:
    """Every range filter x change x number summary task over ``n: int`` (the numbers 1..n), with 2-3
    examples each (n from 4 to 16, so that the products stay readable)."""
    parts = (_RANGE_FILTERS, _RANGE_CHANGES, _NUMBER_SUMMARIES)
    rng = random.Random(seed + 113)
    return _composed_prompts(rng, parts, "n", "int", lambda r: (r.randint(4, 16),), items_of=_numbers_up_to)


def _open_brackets(group: str) -> list[int]:
    """How many brackets of ``group`` are open after each of its characters (``"(())"``: 1, 2, 1, 0)."""
    return list(itertools.accumulate(1 if c == "(" else -1 for c in group))


def _nesting_depth(group: str) -> int:
    """The most brackets of the balanced ``group`` open at once (``"(()())"``: 2)."""
    return max(_open_brackets(group), default=0)


def _top_level_pairs(group: str) -> int:
    """How many pairs of the balanced ``group`` no other pair encloses (``"()(())"``: 2)."""
    return _open_brackets(group).count(0)


# HumanEval-shaped tasks over groups of brackets (``paren-functions``, HumanEval's
# ``separate_paren_groups`` and ``parse_nested_parens`` shape): ``paren_string`` is balanced groups
# of round brackets separated by single spaces; a group filter, a change that makes a number (its
# nesting depth, pairs, top-level pairs) or a group (as is, wrapped, doubled, in square brackets) of
# each kept group and a summary, composed as the list tasks are.
# fmt: off
_PAREN_FILTERS = (  # (name part, noun phrase, keep(group))
    ("deep_groups", "the bracket groups nested more than one level deep", lambda g: _nesting_depth(g) > 1),
    ("flat_groups", "the bracket groups with no pair inside another pair", lambda g: _nesting_depth(g) == 1),
    ("single_pairs", "the bracket groups that are just one pair ()", lambda g: g == "()"),
    ("long_groups", "the bracket groups of more than six brackets", lambda g: len(g) > 6),
    ("enclosed_groups", "the bracket groups enclosed by one outer pair", lambda g: _top_level_pairs(g) == 1),
    ("side_by_side_groups", "the bracket groups of two or more pairs side by side at the top level",
     lambda g: _top_level_pairs(g) > 1),
    ("groups", "all the bracket groups", lambda g: True),
)
_PAREN_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, group -> number)
    ("depths", "the deepest levels of nesting of {}", _nesting_depth),
    ("pair_counts", "the numbers of bracket pairs in {}", lambda g: g.count("(")),
    ("top_level_counts", "the numbers of top-level pairs in {}", _top_level_pairs),
    ("bracket_counts", "the numbers of brackets in {}", len),
)
_PAREN_CHANGES = (  # (name part, phrase around the filtered noun phrase, group -> group)
    ("", "{}", lambda g: g),
    ("wrapped", "{}, each wrapped in one more pair", lambda g: f"({g})"),
    ("doubled", "{}, each written twice side by side", lambda g: g + g),
    ("square", "{}, with square brackets [] instead of round ones",
     lambda g: g.replace("(", "[").replace(")", "]")),
)
_PAREN_SUMMARIES = _summaries_replacing(  # the word summaries, sorted by length, not alphabetically
    _WORD_SUMMARIES,
    ("alphabetical", ("by_length", "Return {} sorted from shortest to longest, equally long ones in their "
     "original order.", "List[str]", lambda gs: sorted(gs, key=len))),
)
# fmt: on


def _bracket_group(rng: random.Random, pairs: int) -> str:
    """A random balanced group of ``pairs`` pairs of round brackets."""
    group, opened, closed = [], 0, 0
    while closed < pairs:
        if opened < pairs and (opened == closed or rng.random() < 0.5):
            group.append("(")
            opened += 1
        else:
            group.append(")")
            closed += 1
    return "".join(group)


def _paren_string(rng: random.Random) -> tuple[str]:
    """3-5 groups of 1-4 pairs separated by single spaces: the bracket tasks' example argument."""
    return (" ".join(_bracket_group(rng, rng.randint(1, 4)) for _ in range(rng.randint(3, 5))),)


def paren_function_prompts(seed: int = 0) -> list[str]:
    """Every bracket-group filter x change x summary task over ``paren_string: str``, with 2-3
    examples each: the number changes with the number summaries, the group changes with the group
    summaries."""
    parts = (_PAREN_FILTERS, _PAREN_NUMBER_CHANGES, _PAREN_CHANGES, _PAREN_SUMMARIES)
    rng = random.Random(seed + 127)
    return _number_and_item_prompts(rng, *parts, "paren_string", "str", _paren_string, str.split)


def _fraction_parts(fraction: str) -> tuple[int, int]:
    """The numerator and denominator of a fraction written ``"3/4"``."""
    numerator, denominator = fraction.split("/")
    return int(numerator), int(denominator)


def _fraction_value(fraction: str) -> Fraction:
    """The exact value of a fraction written ``"3/4"``."""
    return Fraction(*_fraction_parts(fraction))


def _lowest_terms(fraction: str) -> str:
    """A fraction written ``"6/8"`` in lowest terms, written the same way (``"3/4"``, ``"2/1"``)."""
    numerator, denominator = _fraction_parts(fraction)
    common = math.gcd(numerator, denominator)
    return f"{numerator // common}/{denominator // common}"


# HumanEval-shaped tasks over fractions written as text (``fraction-functions``, HumanEval's
# ``simplify`` shape: ``fractions`` is a list of strings "numerator/denominator" of positive whole
# numbers); a fraction filter, a change that makes a number (numerator, denominator, whole part,
# remainder) or a fraction (as is, in lowest terms, upside down, its numerator doubled) of each kept
# fraction and a summary, composed as the list tasks are.
# fmt: off
_FRACTION_FILTERS = (  # (name part, noun phrase, keep(fraction))
    ("proper", "the fractions less than one", lambda f: _fraction_value(f) < 1),
    ("improper", "the fractions equal to or greater than one", lambda f: _fraction_value(f) >= 1),
    ("whole", "the fractions that equal a whole number", lambda f: _fraction_value(f).denominator == 1),
    ("even_denominator", "the fractions with an even denominator", lambda f: _fraction_parts(f)[1] % 2 == 0),
    ("reduced", "the fractions already in lowest terms", lambda f: _lowest_terms(f) == f),
    ("unit", "the fractions with numerator 1", lambda f: _fraction_parts(f)[0] == 1),
    ("fractions", "all the fractions", lambda f: True),
)
_FRACTION_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, fraction -> number)
    ("numerators", "the numerators of {}", lambda f: _fraction_parts(f)[0]),
    ("denominators", "the denominators of {}", lambda f: _fraction_parts(f)[1]),
    ("whole_parts", "the whole parts (numerator // denominator) of {}",
     lambda f: divmod(*_fraction_parts(f))[0]),
    ("remainders", "the remainders (numerator % denominator) of {}",
     lambda f: divmod(*_fraction_parts(f))[1]),
)
_FRACTION_CHANGES = (  # (name part, phrase around the filtered noun phrase, fraction -> fraction)
    ("", "{}", lambda f: f),
    ("simplified", "{}, each in lowest terms", _lowest_terms),
    ("inverted", "{}, each turned upside down", lambda f: "/".join(reversed(f.split("/")))),
    ("doubled", "{}, each with its numerator doubled",
     lambda f: f"{2 * _fraction_parts(f)[0]}/{_fraction_parts(f)[1]}"),
)
_FRACTION_SUMMARIES = _summaries_replacing(  # the word summaries, ordered by value
    _WORD_SUMMARIES,
    ("alphabetical", ("by_value", "Return {}, sorted from smallest to largest value, equal ones in their "
     "original order.", "List[str]", lambda fs: sorted(fs, key=_fraction_value))),
    ("longest", ("largest", "Return the largest of {}; the first one if several are equally large, or "
     "None if there are none.", "Optional[str]", lambda fs: max(fs, key=_fraction_value, default=None))),
)
# fmt: on


def _fractions(rng: random.Random) -> tuple[list[str]]:
    """3-6 fractions, numerators 1-12 over denominators 1-8: the fraction tasks' example argument."""
    return ([f"{rng.randint(1, 12)}/{rng.randint(1, 8)}" for _ in range(rng.randint(3, 6))],)


def fraction_function_prompts(seed: int = 0) -> list[str]:
    """Every fraction filter x change x summary task over ``fractions: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the fraction changes with the fraction
    summaries."""
    parts = (_FRACTION_FILTERS, _FRACTION_NUMBER_CHANGES, _FRACTION_CHANGES, _FRACTION_SUMMARIES)
    rng = random.Random(seed + 131)
    return _number_and_item_prompts(rng, *parts, "fractions", "List[str]", _fractions, iter)


def _written_date(text: str) -> datetime.date:
    """The calendar date written ``"YYYY-MM-DD"`` or, as the US-style change writes it, ``"MM/DD/YYYY"``."""
    if "/" in text:
        return datetime.datetime.strptime(text, "%m/%d/%Y").date()
    return datetime.date.fromisoformat(text)


# HumanEval-shaped tasks over dates written as text (``date-functions``, HumanEval's ``valid_date``
# shape: ``dates`` is a list of valid dates "YYYY-MM-DD"); a date filter, a change that makes a
# number (year, month, day, day of the year) or a date (as is, US order, the next day, the first of
# its month) of each kept date and a summary, composed as the list tasks are.
# fmt: off
_DATE_FILTERS = (  # (name part, noun phrase, keep(date))
    ("first_half", "the dates from January to June", lambda d: _written_date(d).month <= 6),
    ("summer", "the dates in June, July or August", lambda d: _written_date(d).month in (6, 7, 8)),
    ("leap_year", "the dates in a leap year", lambda d: calendar.isleap(_written_date(d).year)),
    ("month_start", "the dates in the first ten days of a month", lambda d: _written_date(d).day <= 10),
    ("weekend", "the dates that fall on a Saturday or a Sunday", lambda d: _written_date(d).weekday() >= 5),
    ("odd_day", "the dates with an odd day of the month", lambda d: _written_date(d).day % 2 == 1),
    ("dates", "all the dates", lambda d: True),
)
_DATE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, date -> number)
    ("years", "the years of {}", lambda d: _written_date(d).year),
    ("months", "the months (1 to 12) of {}", lambda d: _written_date(d).month),
    ("days", "the days of the month of {}", lambda d: _written_date(d).day),
    ("days_of_year", "the days of the year (1 for January 1) of {}",
     lambda d: _written_date(d).timetuple().tm_yday),
)
_DATE_CHANGES = (  # (name part, phrase around the filtered noun phrase, date -> date)
    ("", "{}", lambda d: d),
    ("us_style", "{}, each written MM/DD/YYYY", lambda d: _written_date(d).strftime("%m/%d/%Y")),
    ("next_day", "the days after each of {}, written YYYY-MM-DD",
     lambda d: (_written_date(d) + datetime.timedelta(days=1)).isoformat()),
    ("month_firsts", "the first days of the months of {}, written YYYY-MM-DD", lambda d: d[:8] + "01"),
)
_DATE_SUMMARIES = _comma_summaries_ordered_by(
    _written_date, "Return {}, sorted from the earliest to the latest.",
    ("latest", "Return the latest of {}, or None if there are none."),
)
# fmt: on


def _dates(rng: random.Random) -> tuple[list[str]]:
    """3-6 valid dates from 2019 to 2026, written YYYY-MM-DD: the date tasks' example argument."""
    dates = []
    for _ in range(rng.randint(3, 6)):
        year, month = rng.randint(2019, 2026), rng.randint(1, 12)
        dates.append(
            datetime.date(year, month, rng.randint(1, calendar.monthrange(year, month)[1])).isoformat()
        )
    return (dates,)


def date_function_prompts(seed: int = 0) -> list[str]:
    """Every date filter x change x summary task over ``dates: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the date changes with the date summaries."""
    parts = (_DATE_FILTERS, _DATE_NUMBER_CHANGES, _DATE_CHANGES, _DATE_SUMMARIES)
    rng = random.Random(seed + 137)
    return _number_and_item_prompts(rng, *parts, "dates", "List[str]", _dates, iter)


def _version_numbers(version: str) -> tuple[int, ...]:
    """The numbers of a version written ``"1.2.10"`` (or ``"v1.2.10"``), in order: its sort key."""
    return tuple(int(part) for part in version.removeprefix("v").split("."))


def _bumped_version(version: str, position: int) -> str:
    """``version`` with its number at ``position`` (1: minor, 2: patch) increased by one and the
    numbers after it set to 0."""
    numbers = list(_version_numbers(version))
    numbers[position:] = [numbers[position] + 1] + [0] * (len(numbers) - position - 1)
    return ".".join(map(str, numbers))


# HumanEval-shaped tasks over version strings (``version-functions``: ``versions`` is a list of
# "MAJOR.MINOR.PATCH" strings, compared number by number as package managers do); a version filter,
# a change that makes a number (major, minor, patch, their sum) or a version (as is, the next patch,
# the next minor, tagged with a "v") of each kept version and a summary, composed as the list tasks are.
# fmt: off
_VERSION_FILTERS = (  # (name part, noun phrase, keep(version))
    ("zero_major", "the versions before 1.0.0 (major number 0)", lambda v: _version_numbers(v)[0] == 0),
    ("patched", "the versions whose patch number is not 0", lambda v: _version_numbers(v)[2] != 0),
    ("unpatched", "the versions whose patch number is 0", lambda v: _version_numbers(v)[2] == 0),
    ("even_minor", "the versions with an even minor number", lambda v: _version_numbers(v)[1] % 2 == 0),
    ("two_digit", "the versions with a number of two digits", lambda v: max(_version_numbers(v)) >= 10),
    ("major_above_two", "the versions with a major number above 2", lambda v: _version_numbers(v)[0] > 2),
    ("versions", "all the versions", lambda v: True),
)
_VERSION_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, version -> number)
    ("majors", "the major numbers of {}", lambda v: _version_numbers(v)[0]),
    ("minors", "the minor numbers of {}", lambda v: _version_numbers(v)[1]),
    ("patches", "the patch numbers of {}", lambda v: _version_numbers(v)[2]),
    ("number_sums", "the sums of the three numbers of each of {}", lambda v: sum(_version_numbers(v))),
)
_VERSION_CHANGES = (  # (name part, phrase around the filtered noun phrase, version -> version)
    ("", "{}", lambda v: v),
    ("next_patch", "{}, each with its patch number increased by one", lambda v: _bumped_version(v, 2)),
    ("next_minor", "{}, each with its minor number increased by one and its patch number set to 0",
     lambda v: _bumped_version(v, 1)),
    ("tagged", "{}, each with a 'v' in front", lambda v: "v" + v),
)
_VERSION_SUMMARIES = _comma_summaries_ordered_by(
    _version_numbers, "Return {}, sorted from the oldest to the newest, comparing number by number.",
    ("newest", "Return the newest of {}, comparing number by number, or None if there are none."),
)
# fmt: on


def _version(rng: random.Random) -> str:
    """A version MAJOR.MINOR.PATCH with a major 0-4 and other numbers 0-12 (the patch 0 more often
    than not): an item of the version tasks' examples (:func:`_distinct_texts`)."""
    return f"{rng.randint(0, 4)}.{rng.randint(0, 12)}.{rng.choice((0, 0, rng.randint(1, 12)))}"


def version_function_prompts(seed: int = 0) -> list[str]:
    """Every version filter x change x summary task over ``versions: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the version changes with the version summaries."""
    parts = (_VERSION_FILTERS, _VERSION_NUMBER_CHANGES, _VERSION_CHANGES, _VERSION_SUMMARIES)
    rng = random.Random(seed + 139)
    return _number_and_item_prompts(
        rng, *parts, "versions", "List[str]", lambda r: _distinct_texts(r, _version), iter
    )


def _clock_minutes(text: str) -> int:
    """The minutes since midnight of a clock time written ``"HH:MM"`` (24-hour) or, as the 12-hour
    change writes it, ``"h:MM AM"`` / ``"h:MM PM"``: the time tasks' sort key."""
    clock, _, half = text.partition(" ")
    hour, minute = map(int, clock.split(":"))
    if half:
        hour = hour % 12 + (12 if half == "PM" else 0)
    return hour * 60 + minute


def _written_clock_time(minutes: int) -> str:
    """``minutes`` since midnight as a 24-hour "HH:MM", past midnight starting again at 00:00."""
    hour, minute = divmod(minutes % (24 * 60), 60)
    return f"{hour:02d}:{minute:02d}"


def _twelve_hour_time(text: str) -> str:
    """A 24-hour "HH:MM" written on a 12-hour clock, ``"h:MM AM"`` or ``"h:MM PM"`` (00:30 is 12:30 AM)."""
    hour, minute = divmod(_clock_minutes(text), 60)
    return f"{hour % 12 or 12}:{minute:02d} {'AM' if hour < 12 else 'PM'}"


# HumanEval-shaped tasks over clock times written as text (``time-functions``: ``times`` is a list
# of 24-hour "HH:MM" times of one day); a time filter, a change that makes a number (hour, minute,
# minutes since or until midnight) or a time (as is, on a 12-hour clock, a quarter of an hour later,
# the start of its hour) of each kept time and a summary, composed as the list tasks are.
# fmt: off
_TIME_FILTERS = (  # (name part, noun phrase, keep(time))
    ("morning", "the times before noon", lambda t: _clock_minutes(t) < 12 * 60),
    ("afternoon", "the times from 12:00 to 17:59", lambda t: 12 * 60 <= _clock_minutes(t) < 18 * 60),
    ("evening", "the times from 18:00 on", lambda t: _clock_minutes(t) >= 18 * 60),
    ("on_the_hour", "the times on the hour (minute 00)", lambda t: _clock_minutes(t) % 60 == 0),
    ("quarter_hour", "the times on a quarter hour (minute 00, 15, 30 or 45)",
     lambda t: _clock_minutes(t) % 15 == 0),
    ("odd_hour", "the times with an odd hour", lambda t: _clock_minutes(t) // 60 % 2 == 1),
    ("times", "all the times", lambda t: True),
)
_TIME_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, time -> number)
    ("hours", "the hours (0 to 23) of {}", lambda t: _clock_minutes(t) // 60),
    ("minutes", "the minutes past the hour of {}", lambda t: _clock_minutes(t) % 60),
    ("since_midnight", "the minutes since midnight of {}", _clock_minutes),
    ("to_midnight", "the minutes from each of {} until midnight", lambda t: 24 * 60 - _clock_minutes(t)),
)
_TIME_CHANGES = (  # (name part, phrase around the filtered noun phrase, time -> time)
    ("", "{}", lambda t: t),
    ("twelve_hour", "{}, each written on a 12-hour clock as 'h:MM AM' or 'h:MM PM'", _twelve_hour_time),
    ("quarter_later", "the times a quarter of an hour after each of {}, written HH:MM (past midnight "
     "the clock starts again at 00:00)", lambda t: _written_clock_time(_clock_minutes(t) + 15)),
    ("hour_starts", "the starts of the hours of {}, written HH:00", lambda t: t[:3] + "00"),
)
_TIME_SUMMARIES = _comma_summaries_ordered_by(
    _clock_minutes, "Return {}, sorted from the earliest to the latest in the day.",
    ("latest", "Return the latest in the day of {}, or None if there are none."),
)
# fmt: on


def _clock_time(rng: random.Random) -> str:
    """A 24-hour time "HH:MM", more than four times in five on a quarter hour: an item of the time
    tasks' examples (:func:`_distinct_texts`)."""
    return _written_clock_time(rng.randint(0, 23) * 60 + rng.choice((0, 15, 30, 45, rng.randint(0, 59))))


def time_function_prompts(seed: int = 0) -> list[str]:
    """Every time filter x change x summary task over ``times: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the time changes with the time summaries."""
    parts = (_TIME_FILTERS, _TIME_NUMBER_CHANGES, _TIME_CHANGES, _TIME_SUMMARIES)
    rng = random.Random(seed + 149)
    return _number_and_item_prompts(
        rng, *parts, "times", "List[str]", lambda r: _distinct_texts(r, _clock_time), iter
    )


def _cents(amount: str) -> int:
    """The cents of an amount of money written ``"$12.50"``: the money tasks' sort key."""
    dollars, cents = amount.removeprefix("$").split(".")
    return int(dollars) * 100 + int(cents)


def _written_amount(cents: int) -> str:
    """``cents`` written as an amount of money, ``"$D.CC"`` (1250 -> "$12.50")."""
    return f"${cents // 100}.{cents % 100:02d}"


# HumanEval-shaped tasks over amounts of money written as text (``money-functions``: ``amounts`` is
# a list of "$D.CC" strings); an amount filter, a change that makes a number (cents, whole dollars,
# the cents past the dollar, rounded dollars) or an amount (as is, doubled, with 10% added, a dollar
# off) of each kept amount and a summary, composed as the list tasks are.
# fmt: off
_MONEY_FILTERS = (  # (name part, noun phrase, keep(amount))
    ("under_ten", "the amounts under $10.00", lambda a: _cents(a) < 1000),
    ("over_fifty", "the amounts over $50.00", lambda a: _cents(a) > 5000),
    ("whole_dollars", "the amounts of whole dollars (no cents)", lambda a: _cents(a) % 100 == 0),
    ("with_cents", "the amounts that are not whole dollars", lambda a: _cents(a) % 100 != 0),
    ("ending_99", "the amounts that end in .99", lambda a: _cents(a) % 100 == 99),
    ("even_dollars", "the amounts with an even number of whole dollars", lambda a: _cents(a) // 100 % 2 == 0),
    ("amounts", "all the amounts", lambda a: True),
)
_MONEY_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, amount -> number)
    ("cents", "the values in cents of {}", _cents),
    ("dollars", "the whole dollars of {}", lambda a: _cents(a) // 100),
    ("cent_parts", "the cents past the whole dollars of {}", lambda a: _cents(a) % 100),
    ("rounded", "the nearest whole dollars to {} (50 cents rounds up)", lambda a: (_cents(a) + 50) // 100),
)
_MONEY_CHANGES = (  # (name part, phrase around the filtered noun phrase, amount -> amount)
    ("", "{}", lambda a: a),
    ("doubled", "{}, each doubled", lambda a: _written_amount(2 * _cents(a))),
    ("taxed", "{}, each with 10% added (rounded down to the cent)",
     lambda a: _written_amount(_cents(a) * 11 // 10)),
    ("dollar_off", "{}, each a dollar less (but not below $0.00)",
     lambda a: _written_amount(max(0, _cents(a) - 100))),
)
_MONEY_SUMMARIES = _comma_summaries_ordered_by(
    _cents, "Return {}, sorted from the smallest to the largest amount.",
    ("largest", "Return the largest of {}, or None if there are none."),
)
# fmt: on


def _amount(rng: random.Random) -> str:
    """An amount "$D.CC" from $0 to $120, under $10, from $10 to $49 or from $50 on a third of the
    time each, whole dollars, ending in .99 or in .50 about a quarter each: an item of the money
    tasks' examples (:func:`_distinct_texts`)."""
    dollars = rng.choice((rng.randint(0, 9), rng.randint(10, 49), rng.randint(50, 120)))
    return _written_amount(dollars * 100 + rng.choice((0, 99, 50, rng.randint(1, 98))))


def money_function_prompts(seed: int = 0) -> list[str]:
    """Every money filter x change x summary task over ``amounts: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the amount changes with the amount summaries."""
    parts = (_MONEY_FILTERS, _MONEY_NUMBER_CHANGES, _MONEY_CHANGES, _MONEY_SUMMARIES)
    rng = random.Random(seed + 151)
    return _number_and_item_prompts(
        rng, *parts, "amounts", "List[str]", lambda r: _distinct_texts(r, _amount), iter
    )


# HumanEval-shaped tasks over file paths (``path-functions``, HumanEval's ``file_name_check`` shape:
# ``paths`` is a list of relative POSIX paths "dir/sub/name.ext"); a path filter, a change that makes a
# number (directories deep, the lengths of the name, the path and the extension) or a path (as is,
# its file name, its directory, without its extension) of each kept path and a summary, composed as
# the list tasks are (``posixpath`` says what a name, a directory and an extension are).
# fmt: off
_PATH_FILTERS = (  # (name part, noun phrase, keep(path))
    ("python", "the paths of Python files (ending in .py)", lambda p: p.endswith(".py")),
    ("hidden", "the paths of hidden files (a file name that starts with a dot)",
     lambda p: posixpath.basename(p).startswith(".")),
    ("top_level", "the paths of files at the top level (no directory)", lambda p: "/" not in p),
    ("nested", "the paths two or more directories deep", lambda p: p.count("/") >= 2),
    ("in_src", "the paths under the src directory", lambda p: p.startswith("src/")),
    ("no_extension", "the paths of files without an extension", lambda p: posixpath.splitext(p)[1] == ""),
    ("paths", "all the paths", lambda p: True),
)
_PATH_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, path -> number)
    ("depths", "the numbers of directories in {}", lambda p: p.count("/")),
    ("name_lengths", "the lengths of the file names of {}", lambda p: len(posixpath.basename(p))),
    ("lengths", "the lengths of {}", len),
    ("extension_lengths", "the lengths of the extensions (with the dot, 0 for none) of {}",
     lambda p: len(posixpath.splitext(p)[1])),
)
_PATH_CHANGES = (  # (name part, phrase around the filtered noun phrase, path -> path)
    ("", "{}", lambda p: p),
    ("names", "the file names of {}", posixpath.basename),
    ("directories", "the directories of {} ('' for a file at the top level)", posixpath.dirname),
    ("stems", "{}, each without its extension", lambda p: posixpath.splitext(p)[0]),
)
# fmt: on
_PATH_TOP_DIRECTORIES = ("src", "src", "src", "docs", "tests", "data", "lib")
_PATH_DIRECTORIES = ("src", "docs", "tests", "data", "lib", "build", "assets", "notes", "utils")
_PATH_NAMES = ("main", "utils", "README", "config", "report", "index", "setup", "logo", "notes", "app")
_PATH_EXTENSIONS = (".py", ".py", ".txt", ".md", ".json", ".csv", ".png", "")
_HIDDEN_FILE_NAMES = (".env", ".gitignore", ".bashrc", ".config.json")


def _path(rng: random.Random) -> str:
    """A relative path of 0-3 directories (the first one src three times in seven) and a file name,
    hidden about one time in eight: an item of the path tasks' examples (:func:`_distinct_texts`)."""
    depth = rng.choice((0, 1, 1, 2, 2, 3))
    top = [rng.choice(_PATH_TOP_DIRECTORIES)] if depth else []
    directories = top + [rng.choice(_PATH_DIRECTORIES) for _ in range(depth - 1)]
    if rng.random() < 0.125:
        name = rng.choice(_HIDDEN_FILE_NAMES)
    else:
        name = rng.choice(_PATH_NAMES) + rng.choice(_PATH_EXTENSIONS)
    return "/".join((*directories, name))


def path_function_prompts(seed: int = 0) -> list[str]:
    """Every path filter x change x summary task over ``paths: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the path changes with the word summaries (joined
    by commas)."""
    parts = (_PATH_FILTERS, _PATH_NUMBER_CHANGES, _PATH_CHANGES, _COMMA_WORD_SUMMARIES)
    rng = random.Random(seed + 157)
    return _number_and_item_prompts(
        rng, *parts, "paths", "List[str]", lambda r: _distinct_texts(r, _path), iter
    )


def _binary_value(binary: str) -> int:
    """The value of a binary number written with the digits 0 and 1 (``"1011"`` -> 11): the binary
    tasks' sort key."""
    return int(binary, 2)


def _written_binary(value: int) -> str:
    """``value`` written in binary without leading zeros (``"0"`` for zero), so that two binary
    numbers of one value are one text (a largest one is one text, whichever a solution picks)."""
    return format(value, "b")


# HumanEval-shaped tasks over binary numbers written as text (``binary-functions``, HumanEval's
# ``decimal_to_binary`` and ``string_xor`` material: ``binaries`` is a list of strings of the digits
# 0 and 1 without leading zeros); a filter, a change that makes a number (value, ones, digits, zeros
# at the end) or a binary number (as is, its digits flipped, reversed, plus one) of each kept one and
# a summary, composed as the list tasks are; every changed binary number drops its leading zeros.
# fmt: off
_BINARY_FILTERS = (  # (name part, noun phrase, keep(binary))
    ("odd", "the binary numbers whose value is odd (ending in 1)", lambda b: b.endswith("1")),
    ("even", "the binary numbers whose value is even (ending in 0)", lambda b: b.endswith("0")),
    ("palindromes", "the binary numbers that read the same backwards", lambda b: b == b[::-1]),
    ("double_ones", "the binary numbers with two 1 digits in a row", lambda b: "11" in b),
    ("long", "the binary numbers of five or more digits", lambda b: len(b) >= 5),
    ("over_ten", "the binary numbers whose value is over 10", lambda b: _binary_value(b) > 10),
    ("binaries", "all the binary numbers", lambda b: True),
)
_BINARY_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, binary -> number)
    ("values", "the values of {}", _binary_value),
    ("ones", "the numbers of 1 digits of {}", lambda b: b.count("1")),
    ("digit_counts", "the numbers of digits of {}", len),
    ("trailing_zeros", "the numbers of 0 digits at the end of {}", lambda b: len(b) - len(b.rstrip("0"))),
)
_BINARY_CHANGES = (  # (name part, phrase around the filtered noun phrase, binary -> binary)
    ("", "{}", lambda b: b),
    ("flipped", "{}, each with every digit flipped (0 to 1, 1 to 0) and leading zeros dropped",
     lambda b: _written_binary(_binary_value(b) ^ (2 ** len(b) - 1))),
    ("reversed", "{}, each with its digits reversed and leading zeros dropped",
     lambda b: _written_binary(_binary_value(b[::-1]))),
    ("incremented", "{}, each plus one (in binary)", lambda b: _written_binary(_binary_value(b) + 1)),
)
_BINARY_SUMMARIES = _comma_summaries_ordered_by(
    _binary_value, "Return {}, sorted from the smallest to the largest value.",
    ("largest", "Return the one of {} with the largest value, or None if there are none."),
)
# fmt: on


def _binary(rng: random.Random) -> str:
    """A binary number of value 0-7, 8-31 or 32-127 a third of the time each: an item of the binary
    tasks' examples (:func:`_distinct_texts`)."""
    return _written_binary(rng.choice((rng.randint(0, 7), rng.randint(8, 31), rng.randint(32, 127))))


def binary_function_prompts(seed: int = 0) -> list[str]:
    """Every binary filter x change x summary task over ``binaries: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the binary changes with the binary summaries
    (sorted and largest by value)."""
    parts = (_BINARY_FILTERS, _BINARY_NUMBER_CHANGES, _BINARY_CHANGES, _BINARY_SUMMARIES)
    rng = random.Random(seed + 163)
    return _number_and_item_prompts(
        rng, *parts, "binaries", "List[str]", lambda r: _distinct_texts(r, _binary), iter
    )


def _identifier_words(identifier: str) -> list[str]:
    """The words of a Python identifier in lower case, split at underscores and before a capital letter
    that follows a lower case letter or a digit (``"_maxItemCount"`` -> ["max", "item", "count"])."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", identifier).strip("_").lower().split("_")


def _camel_case(identifier: str) -> str:
    """``identifier``'s words in camelCase: the first in lower case, each other one capitalized."""
    first, *others = _identifier_words(identifier)
    return first + "".join(word.capitalize() for word in others)


# HumanEval-shaped tasks over Python identifiers (``identifier-functions``, HumanEval's
# ``Strongest_Extension`` material: ``identifiers`` is a list of names in snake_case, camelCase,
# PascalCase or CONSTANT_CASE, some private, some with a digit); a filter, a change that makes a
# number (length, capital letters, underscores, words) or an identifier (as is, in snake_case, in
# camelCase, in upper case) of each kept one and a summary, composed as the list tasks are.
# fmt: off
_IDENTIFIER_FILTERS = (  # (name part, noun phrase, keep(identifier))
    ("snake_case", "the identifiers with an underscore and no capital letter",
     lambda i: "_" in i and i == i.lower()),
    ("camel_case", "the identifiers that start with a lower case letter and contain a capital letter",
     lambda i: i[0].islower() and i != i.lower()),
    ("constants", "the identifiers written all in capitals", str.isupper),
    ("private", "the identifiers that start with an underscore", lambda i: i.startswith("_")),
    ("with_digits", "the identifiers that contain a digit", lambda i: any(c.isdigit() for c in i)),
    ("short", "the identifiers of at most six characters", lambda i: len(i) <= 6),
    ("identifiers", "all the identifiers", lambda i: True),
)
_IDENTIFIER_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, identifier -> number)
    ("lengths", "the lengths of {}", len),
    ("capitals", "the numbers of capital letters in {}", lambda i: sum(c.isupper() for c in i)),
    ("underscores", "the numbers of underscores in {}", lambda i: i.count("_")),
    ("word_counts", "the numbers of words in {} (split at underscores and before a capital letter that "
     "follows a lower case letter or a digit)", lambda i: len(_identifier_words(i))),
)
_IDENTIFIER_CHANGES = (  # (name part, phrase around the filtered noun phrase, identifier -> identifier)
    ("", "{}", lambda i: i),
    ("snake", "{}, each in snake_case (its words in lower case joined by underscores, no leading underscore)",
     lambda i: "_".join(_identifier_words(i))),
    ("camel", "{}, each in camelCase (the first word in lower case, each other word capitalized, no "
     "underscores)", _camel_case),
    ("upper", "{}, each in upper case", str.upper),
)
_IDENTIFIER_WORDS = (
    "user", "name", "max", "count", "total", "file", "path", "value", "item", "index", "data", "size",
    "row", "key", "page", "score",
)
# fmt: on


def _identifier(rng: random.Random) -> str:
    """An identifier of 1-3 words in snake_case, camelCase, PascalCase or CONSTANT_CASE (a quarter
    each), private one time in four, ending in a digit one time in six: an item of the identifier
    tasks' examples (:func:`_distinct_texts`)."""
    words = rng.sample(_IDENTIFIER_WORDS, rng.choice((1, 2, 2, 3)))
    if rng.random() < 1 / 6:
        words[-1] += str(rng.randint(1, 9))
    snake = "_".join(words)
    styles = (snake, _camel_case(snake), "".join(word.capitalize() for word in words), snake.upper())
    name = rng.choice(styles)
    return "_" + name if rng.random() < 1 / 4 else name


def identifier_function_prompts(seed: int = 0) -> list[str]:
    """Every identifier filter x change x summary task over ``identifiers: List[str]``, with 2-3
    examples each: the number changes with the number summaries, the identifier changes with the
    word summaries (joined by commas)."""
    parts = (_IDENTIFIER_FILTERS, _IDENTIFIER_NUMBER_CHANGES, _IDENTIFIER_CHANGES, _COMMA_WORD_SUMMARIES)
    rng = random.Random(seed + 173)
    return _number_and_item_prompts(
        rng, *parts, "identifiers", "List[str]", lambda r: _distinct_texts(r, _identifier), iter
    )


def _color_parts(color: str) -> tuple[int, ...]:
    """The red, green and blue parts (0-255) of a ``#rrggbb`` color (``"#ff8000"`` -> (255, 128, 0))."""
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))


def _written_color(parts: Iterable[int]) -> str:
    """``parts`` (red, green, blue, each 0-255) written as a ``#rrggbb`` color in lower case."""
    return "#" + "".join(f"{part:02x}" for part in parts)


def _color_value(color: str) -> int:
    """A color's six hex digits read as one number (``"#0000ff"`` -> 255): the color tasks' sort key,
    the same for a color in lower and in upper case."""
    return int(color[1:], 16)


# HumanEval-shaped tasks over hex colors (``color-functions``, HumanEval's ``hex_key`` material:
# ``colors`` is a list of ``#rrggbb`` strings in lower case, some grey, some web-safe); a filter, a
# change that makes a number (red part, brightness, largest part, spread) or a color (as is,
# inverted, made grey, in upper case) of each kept one and a summary, composed as the list tasks are.
# fmt: off
_COLOR_FILTERS = (  # (name part, noun phrase, keep(color))
    ("grey", "the colors whose red, green and blue parts are equal",
     lambda c: len(set(_color_parts(c))) == 1),
    ("reddish", "the colors whose red part is larger than both their green and blue parts",
     lambda c: _color_parts(c)[0] > max(_color_parts(c)[1:])),
    ("greenish", "the colors whose green part is larger than both their red and blue parts",
     lambda c: _color_parts(c)[1] > max(_color_parts(c)[::2])),
    ("bluish", "the colors whose blue part is larger than both their red and green parts",
     lambda c: _color_parts(c)[2] > max(_color_parts(c)[:2])),
    ("dark", "the colors whose three parts add up to less than 384", lambda c: sum(_color_parts(c)) < 384),
    ("web_safe", "the web-safe colors (every part one of 00, 33, 66, 99, cc and ff)",
     lambda c: all(part % 51 == 0 for part in _color_parts(c))),
    ("colors", "all the colors", lambda c: True),
)
_COLOR_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, color -> number)
    ("reds", "the red parts (0 to 255) of {}", lambda c: _color_parts(c)[0]),
    ("brightness", "the sums of the red, green and blue parts of {}", lambda c: sum(_color_parts(c))),
    ("top_parts", "the biggest parts (the largest of red, green and blue) of {}",
     lambda c: max(_color_parts(c))),
    ("spreads", "the differences between the largest and the smallest part of each of {}",
     lambda c: max(_color_parts(c)) - min(_color_parts(c))),
)
_COLOR_CHANGES = (  # (name part, phrase around the filtered noun phrase, color -> color)
    ("", "{}", lambda c: c),
    ("inverted", "{}, each inverted (every part p becomes 255 - p)",
     lambda c: _written_color(255 - part for part in _color_parts(c))),
    ("greyed", "{}, each made grey (every part becomes the mean of the three parts, rounded down)",
     lambda c: _written_color([sum(_color_parts(c)) // 3] * 3)),
    ("upper", "{}, each with its hex digits in upper case", str.upper),
)
_COLOR_SUMMARIES = _comma_summaries_ordered_by(
    _color_value, "Return {}, sorted by their six hex digits read as one number, smallest first.",
    ("largest", "Return the one of {} whose six hex digits read as one number are the largest, or None "
     "if there are none."),
)
_WEB_SAFE_PARTS = (0, 51, 102, 153, 204, 255)
# fmt: on


def _color(rng: random.Random) -> str:
    """A ``#rrggbb`` color, grey one time in six, else each part web-safe half the time and any value
    0-255 otherwise: an item of the color tasks' examples (:func:`_distinct_texts`)."""
    if rng.random() < 1 / 6:
        return _written_color([rng.choice((*_WEB_SAFE_PARTS, rng.randint(0, 255)))] * 3)
    return _written_color(
        rng.choice(_WEB_SAFE_PARTS) if rng.random() < 0.5 else rng.randint(0, 255) for _ in range(3)
    )


def color_function_prompts(seed: int = 0) -> list[str]:
    """Every color filter x change x summary task over ``colors: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the color changes with the color summaries (sorted
    and largest by the value of their hex digits)."""
    parts = (_COLOR_FILTERS, _COLOR_NUMBER_CHANGES, _COLOR_CHANGES, _COLOR_SUMMARIES)
    rng = random.Random(seed + 179)
    return _number_and_item_prompts(
        rng, *parts, "colors", "List[str]", lambda r: _distinct_texts(r, _color), iter
    )


# HumanEval-shaped tasks over e-mail addresses (``email-functions``: ``emails`` is a list of
# ``user@domain`` strings, the user name a first name, sometimes with a last name after a dot or a
# number, one in five capitalized); a filter, a change that makes a number (length, user name's
# length, dots, digits) or a text (as is, the user name, the domain, in lower case) of each kept one
# and a summary, composed as the list tasks are.
# fmt: off
_EMAIL_FILTERS = (  # (name part, noun phrase, keep(email))
    ("dotted", "the emails whose user name (the part before the @) contains a dot",
     lambda e: "." in e.split("@")[0]),
    ("with_digits", "the emails that contain a digit", lambda e: any(c.isdigit() for c in e)),
    ("dot_com", "the emails that end with '.com'", lambda e: e.endswith(".com")),
    ("short_user", "the emails whose user name (the part before the @) has at most five characters",
     lambda e: len(e.split("@")[0]) <= 5),
    ("capitalized", "the emails that contain a capital letter", lambda e: e != e.lower()),
    ("long_domain", "the emails whose domain (the part after the @) is longer than eight characters",
     lambda e: len(e.split("@")[1]) > 8),
    ("emails", "all the emails", lambda e: True),
)
_EMAIL_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, email -> number)
    ("lengths", "the lengths of {}", len),
    ("user_lengths", "the lengths of the user names (the parts before the @) of {}",
     lambda e: len(e.split("@")[0])),
    ("dots", "the numbers of dots in {}", lambda e: e.count(".")),
    ("digits", "the numbers of digits in {}", lambda e: sum(c.isdigit() for c in e)),
)
_EMAIL_CHANGES = (  # (name part, phrase around the filtered noun phrase, email -> text)
    ("", "{}", lambda e: e),
    ("users", "the user names (the parts before the @) of {}", lambda e: e.split("@")[0]),
    ("domains", "the domains (the parts after the @) of {}", lambda e: e.split("@")[1]),
    ("lower", "{}, each in lower case", str.lower),
)
_EMAIL_LAST_NAMES = ("smith", "garcia", "kim", "okafor", "novak", "silva", "ito", "brown")
_EMAIL_DOMAINS = ("example.com", "mail.org", "school.edu", "work.net", "post.de", "shop.com", "lab.io")
# fmt: on


def _email(rng: random.Random) -> str:
    """An e-mail address: a first name, a dot and a last name one time in three, a number 1-99 one
    time in four, at one of a few domains, capitalized one time in five: an item of the email tasks'
    examples (:func:`_distinct_texts`)."""
    user = rng.choice(_NAMES).lower()
    if rng.random() < 1 / 3:
        user += "." + rng.choice(_EMAIL_LAST_NAMES)
    if rng.random() < 1 / 4:
        user += str(rng.randint(1, 99))
    email = f"{user}@{rng.choice(_EMAIL_DOMAINS)}"
    return email.capitalize() if rng.random() < 1 / 5 else email


def email_function_prompts(seed: int = 0) -> list[str]:
    """Every email filter x change x summary task over ``emails: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_EMAIL_FILTERS, _EMAIL_NUMBER_CHANGES, _EMAIL_CHANGES, _COMMA_WORD_SUMMARIES)
    rng = random.Random(seed + 181)
    return _number_and_item_prompts(
        rng, *parts, "emails", "List[str]", lambda r: _distinct_texts(r, _email), iter
    )


# HumanEval-shaped tasks over a list of dictionaries (``people-functions``: ``people`` is a list of
# ``{'name': str, 'age': int, 'city': str}`` records, children, teenagers and adults); a filter, a
# change that makes a number (age, age in ten years, name's length, city's length) or a text (name,
# city, a "name (age)" label, name in upper case) of each kept person and a summary, composed as the
# list tasks are.
# fmt: off
_PEOPLE_FILTERS = (  # (name part, noun phrase, keep(person))
    ("adults", "the people aged 18 or over", lambda p: p["age"] >= 18),
    ("children", "the people under 13", lambda p: p["age"] < 13),
    ("teens", "the people aged 13 to 19", lambda p: 13 <= p["age"] <= 19),
    ("in_oslo", "the people whose city is 'Oslo'", lambda p: p["city"] == "Oslo"),
    ("long_names", "the people whose name has more than four letters", lambda p: len(p["name"]) > 4),
    ("even_ages", "the people whose age is even", lambda p: p["age"] % 2 == 0),
    ("people", "all the people", lambda p: True),
)
_PEOPLE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, person -> number)
    ("ages", "the ages of {}", lambda p: p["age"]),
    ("ages_in_ten_years", "the ages of {} in ten years", lambda p: p["age"] + 10),
    ("name_lengths", "the lengths of the names of {}", lambda p: len(p["name"])),
    ("city_lengths", "the lengths of the city names of {}", lambda p: len(p["city"])),
)
_PEOPLE_CHANGES = (  # (name part, phrase around the filtered noun phrase, person -> text)
    ("names", "the names of {}", lambda p: p["name"]),
    ("cities", "the cities of {}", lambda p: p["city"]),
    ("labels", "the labels 'name (age)' of {}", lambda p: f"{p['name']} ({p['age']})"),
    ("upper_names", "the names of {} in upper case", lambda p: p["name"].upper()),
)
_PEOPLE_CITIES = ("Oslo", "Lima", "Paris", "Tokyo", "Cairo", "Austin")
# fmt: on


def _people(rng: random.Random) -> tuple[list[dict]]:
    """3-5 people of distinct names, each a child, a teenager or an adult a third of the time, in one
    of a few cities: the whole argument tuple of the people tasks' examples."""
    names = rng.sample(_NAMES, rng.randint(3, 5))
    ages = [rng.choice((rng.randint(3, 12), rng.randint(13, 19), rng.randint(20, 80))) for _ in names]
    return ([{"name": n, "age": a, "city": rng.choice(_PEOPLE_CITIES)} for n, a in zip(names, ages)],)


def people_function_prompts(seed: int = 0) -> list[str]:
    """Every people filter x change x summary task over ``people: List[dict]``, with 2-3 examples
    each: the number changes with the number summaries, the text changes with the word summaries
    (joined by commas)."""
    parts = (_PEOPLE_FILTERS, _PEOPLE_NUMBER_CHANGES, _PEOPLE_CHANGES, _COMMA_WORD_SUMMARIES)
    rng = random.Random(seed + 191)
    return _number_and_item_prompts(rng, *parts, "people", "List[dict]", _people, iter)


# HumanEval-shaped tasks over the terms of a sequence made from ``n: int`` (``sequence-functions``,
# the shape of HumanEval's ``get_odd_collatz``, ``tri`` and ``factorize``: a rule walked with a loop or
# a recurrence), a filter over the terms and a number summary, composed as the list tasks are.
# fmt: off
_SEQUENCE_TERM_FILTERS = (  # (name part, noun phrase around the sequence's, keep)
    ("even", "the even numbers in {}", lambda x: x % 2 == 0),
    ("odd", "the odd numbers in {}", lambda x: x % 2 == 1),
    ("triple", "the multiples of three in {}", lambda x: x % 3 == 0),
    ("above_ten", "the numbers greater than ten in {}", lambda x: x > 10),
    ("all", "all the numbers in {}", lambda x: True),
)
# fmt: on


def _fibonacci_like(n: int) -> list[int]:
    """The first ``n`` terms of 1, 2, 3, 5, 8, ... (each the sum of the two before it)."""
    terms, a, b = [], 1, 2
    for _ in range(n):
        terms.append(a)
        a, b = b, a + b
    return terms


def _prime_factors(n: int) -> list[int]:
    """The prime factors of ``n`` in increasing order, each as often as it divides ``n``."""
    factors, p = [], 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors


def _walk_while(n: int, go_on: Callable[[int], bool], step: Callable[[int], int]) -> list[int]:
    """``n`` and the numbers ``step`` makes of it, one from the other, as long as ``go_on`` holds for
    the last one."""
    terms = [n]
    while go_on(terms[-1]):
        terms.append(step(terms[-1]))
    return terms


# (name part, noun phrase, the terms made from n, the examples' n range): every sequence positive.
# fmt: off
_SEQUENCES = (
    ("fibonacci_like", "the first n terms of the sequence 1, 2, 3, 5, 8, ..., in which each term is the "
     "sum of the two before it", _fibonacci_like, (1, 12)),
    ("triangular", "the first n triangular numbers (1, 3, 6, 10, ...)",
     lambda n: [k * (k + 1) // 2 for k in range(1, n + 1)], (1, 10)),
    ("powers_of_two", "the first n powers of two (1, 2, 4, 8, ...)",
     lambda n: [2**k for k in range(n)], (1, 8)),
    ("divisors", "the divisors of n", lambda n: [d for d in range(1, n + 1) if n % d == 0], (1, 60)),
    ("prime_factors", "the prime factors of n (smallest first, each repeated as often as it divides n)",
     _prime_factors, (2, 100)),
    ("halvings", "the halving chain of n (n, then n // 2, then that // 2 and so on, down to 1)",
     lambda n: _walk_while(n, lambda x: x > 1, lambda x: x // 2), (1, 100)),
    ("thirds_walk", "the thirds walk from n to 1 (a multiple of three is divided by three, any other "
     "number grows by one; n and 1 included)", lambda n: _walk_while(n, lambda x: x != 1,
     lambda x: x // 3 if x % 3 == 0 else x + 1), (1, 40)),
    ("digit_sum_chain", "the digit-sum chain of n (n, the sum of its digits, the sum of that number's "
     "digits and so on, down to one digit)", lambda n: _walk_while(n, lambda x: x > 9,
     lambda x: sum(_digits(x))), (1, 9999)),
)
# fmt: on


def sequence_function_prompts(seed: int = 0) -> list[str]:
    """Every sequence x term filter x number summary task over ``n: int`` (the sequence's terms made
    from n), with 2-3 examples each, n drawn from the sequence's own range."""
    rng = random.Random(seed + 193)
    as_is = _NUMBER_CHANGES[:1]  # the terms themselves: no change
    prompts = []
    for sequence_name, sequence_noun, terms_of, (low, high) in _SEQUENCES:
        filters = [
            (f"{name}_{sequence_name}", noun.format(sequence_noun), keep)
            for name, noun, keep in _SEQUENCE_TERM_FILTERS
        ]
        parts = (filters, as_is, _NUMBER_SUMMARIES)
        make_call = lambda r, low=low, high=high: (r.randint(low, high),)  # noqa: E731
        prompts += _composed_prompts(rng, parts, "n", "int", make_call, items_of=terms_of)
    return prompts


# HumanEval-shaped tasks over a nested dictionary (``stock-functions``: ``stock`` maps each shop's name
# to its shelf, a dictionary of item name to count); a filter over the shops, a change that makes a
# number (total count, kinds of item, apples, largest count) or a text (name, name in upper case, most
# stocked item, items joined by '+') of each kept shop and a summary, composed as the list tasks are.
# fmt: off
_STOCK_FILTERS = (  # (name part, noun phrase, keep((shop, shelf)))
    ("with_apples", "the shops whose shelf has an 'apple' entry", lambda s: "apple" in s[1]),
    ("big", "the shops holding more than 30 items in all", lambda s: sum(s[1].values()) > 30),
    ("varied", "the shops with at least three kinds of item", lambda s: len(s[1]) >= 3),
    ("with_empty_shelf", "the shops with an item whose count is 0", lambda s: 0 in s[1].values()),
    ("long_names", "the shops whose name has more than four letters", lambda s: len(s[0]) > 4),
    ("well_stocked", "the shops where every count is at least 5", lambda s: min(s[1].values()) >= 5),
    ("shops", "all the shops", lambda s: True),
)
_STOCK_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, (shop, shelf) -> number)
    ("totals", "the total item counts of {}", lambda s: sum(s[1].values())),
    ("kinds", "the numbers of kinds of item of {}", lambda s: len(s[1])),
    ("apples", "the apple counts of {} (0 for a shop without an 'apple' entry)",
     lambda s: s[1].get("apple", 0)),
    ("largest_counts", "the largest item counts of {}", lambda s: max(s[1].values())),
)
_STOCK_CHANGES = (  # (name part, phrase around the filtered noun phrase, (shop, shelf) -> text)
    ("names", "the names of {}", lambda s: s[0]),
    ("upper_names", "the names of {} in upper case", lambda s: s[0].upper()),
    ("top_items", "the most stocked items of {} (the first in shelf order where counts tie)",
     lambda s: max(s[1], key=s[1].get)),
    ("item_lists", "the item names of {}, each shelf's joined by '+' in shelf order",
     lambda s: "+".join(s[1])),
)
_STOCK_SHOPS = ("North", "South", "East", "West", "Harbor", "Market", "Uptown", "Oak", "Bridge")
_STOCK_ITEMS = ("apple", "pear", "plum", "lemon", "fig", "melon", "kiwi", "lime")
# fmt: on


def _stock(rng: random.Random) -> tuple[dict[str, dict[str, int]]]:
    """2-4 shops of distinct names, each with a shelf of 1-4 distinct items, a third of the counts 0:
    the whole argument tuple of the stock tasks' examples."""
    stock = {}
    for shop in rng.sample(_STOCK_SHOPS, rng.randint(2, 4)):
        items = rng.sample(_STOCK_ITEMS, rng.randint(1, 4))
        stock[shop] = {item: rng.choice((0, rng.randint(1, 20), rng.randint(5, 30))) for item in items}
    return (stock,)


def stock_function_prompts(seed: int = 0) -> list[str]:
    """Every stock filter x change x summary task over ``stock: Dict[str, Dict[str, int]]``, with 2-3
    examples each: the number changes with the number summaries, the text changes with the word
    summaries (joined by commas)."""
    parts = (_STOCK_FILTERS, _STOCK_NUMBER_CHANGES, _STOCK_CHANGES, _COMMA_WORD_SUMMARIES)
    rng = random.Random(seed + 199)
    return _number_and_item_prompts(rng, *parts, "stock", "Dict[str, Dict[str, int]]", _stock, dict.items)


# HumanEval-shaped tasks over log lines (``log-functions``: ``logs`` is a list of ``"LEVEL: message"``
# lines, LEVEL one of ERROR, WARN, INFO and DEBUG); a filter over the lines, a change that makes a
# number (message's length, words, digits, the number in it) or a text (message, level in lower case,
# message's first word, message in upper case) of each kept line and a summary, composed as the list
# tasks are.


def _log_message(line: str) -> str:
    """The message of a ``"LEVEL: message"`` log line."""
    return line.split(": ", 1)[1]


# fmt: off
_LOG_FILTERS = (  # (name part, noun phrase, keep(line))
    ("errors", "the lines whose level is ERROR", lambda line: line.startswith("ERROR: ")),
    ("warnings", "the lines whose level is WARN", lambda line: line.startswith("WARN: ")),
    ("not_debug", "the lines whose level is not DEBUG", lambda line: not line.startswith("DEBUG: ")),
    ("about_disk", "the lines whose message mentions 'disk'", lambda line: "disk" in _log_message(line)),
    ("long_messages", "the lines whose message has more than three words",
     lambda line: len(_log_message(line).split()) > 3),
    ("with_numbers", "the lines whose message contains a digit",
     lambda line: any(c.isdigit() for c in _log_message(line))),
    ("lines", "all the lines", lambda line: True),
)
_LOG_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, line -> number)
    ("message_lengths", "the lengths of the messages of {}", lambda line: len(_log_message(line))),
    ("word_counts", "the numbers of words in the messages of {}",
     lambda line: len(_log_message(line).split())),
    ("digit_counts", "the numbers of digits in the messages of {}",
     lambda line: sum(c.isdigit() for c in _log_message(line))),
    ("first_numbers", "the first whole numbers in the messages of {} (0 for a message without one)",
     lambda line: next((int(w) for w in _log_message(line).split() if w.isdigit()), 0)),
)
_LOG_CHANGES = (  # (name part, phrase around the filtered noun phrase, line -> text)
    ("messages", "the messages of {}", _log_message),
    ("levels", "the levels of {} in lower case", lambda line: line.split(": ", 1)[0].lower()),
    ("first_words", "the first words of the messages of {}", lambda line: _log_message(line).split()[0]),
    ("upper_messages", "the messages of {} in upper case", lambda line: _log_message(line).upper()),
)
_LOG_LEVELS = ("ERROR", "WARN", "INFO", "DEBUG")
_LOG_MESSAGES = (
    "disk full", "disk 3 almost full", "user {} logged in", "user {} logged out", "cache miss",
    "retry {} of 5", "job {} done", "connection lost", "slow disk read on drive {}", "config loaded",
    "queue has {} items", "timeout after {} seconds", "server started", "backup of disk {} finished",
)
# fmt: on


def _log_lines(rng: random.Random) -> tuple[list[str]]:
    """3-6 distinct ``"LEVEL: message"`` lines, the numbers in the messages drawn from 1 to 99: the
    whole argument tuple of the log tasks' examples."""
    count = rng.randint(3, 6)
    return (_distinct_draws(rng, count, _log_line),)


def _log_line(rng: random.Random) -> str:
    """One ``"LEVEL: message"`` line, the number in its message (if any) drawn from 1 to 99."""
    return f"{rng.choice(_LOG_LEVELS)}: {rng.choice(_LOG_MESSAGES).format(rng.randint(1, 99))}"


def log_function_prompts(seed: int = 0) -> list[str]:
    """Every log filter x change x summary task over ``logs: List[str]``, with 2-3 examples each: the
    number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_LOG_FILTERS, _LOG_NUMBER_CHANGES, _LOG_CHANGES, _COMMA_WORD_SUMMARIES)
    return _number_and_item_prompts(random.Random(seed + 223), *parts, "logs", "List[str]", _log_lines, iter)


# HumanEval-shaped tasks over web addresses (``url-functions``: ``urls`` is a list of
# ``"scheme://host/path?query"`` strings, the path and the query possibly empty); a filter over the
# addresses, a change that makes a number (host's length, path segments, query parameters, the
# address's length) or a text (host, scheme in upper case, last path segment, host without 'www.')
# of each kept address and a summary, composed as the list tasks are.


def _url_host(url: str) -> str:
    """The host of a ``"scheme://host/path?query"`` address."""
    return url.split("://", 1)[1].split("/", 1)[0]


def _url_segments(url: str) -> list[str]:
    """The non-empty path segments of a ``"scheme://host/path?query"`` address, in order."""
    path = url.split("://", 1)[1].split("?", 1)[0].split("/", 1)[1]
    return [segment for segment in path.split("/") if segment]


def _url_parameters(url: str) -> list[str]:
    """The ``name=value`` parameters of an address's query, none without a query."""
    return url.split("?", 1)[1].split("&") if "?" in url else []


# fmt: off
_URL_FILTERS = (  # (name part, noun phrase, keep(url))
    ("secure", "the urls whose scheme is https", lambda url: url.startswith("https://")),
    ("with_query", "the urls with a query (a '?' part)", lambda url: "?" in url),
    ("www", "the urls whose host starts with 'www.'", lambda url: _url_host(url).startswith("www.")),
    ("org", "the urls whose host ends with '.org'", lambda url: _url_host(url).endswith(".org")),
    ("deep", "the urls whose path has at least two segments", lambda url: len(_url_segments(url)) >= 2),
    ("short", "the urls of at most 30 characters", lambda url: len(url) <= 30),
    ("urls", "all the urls", lambda url: True),
)
_URL_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, url -> number)
    ("host_lengths", "the lengths of the hosts of {}", lambda url: len(_url_host(url))),
    ("depths", "the numbers of path segments of {}", lambda url: len(_url_segments(url))),
    ("parameter_counts", "the numbers of query parameters of {}", lambda url: len(_url_parameters(url))),
    ("lengths", "the lengths of {}", len),
)
_URL_CHANGES = (  # (name part, phrase around the filtered noun phrase, url -> text)
    ("hosts", "the hosts of {}", _url_host),
    ("schemes", "the schemes of {} in upper case", lambda url: url.split("://", 1)[0].upper()),
    ("last_segments", "the last path segments of {} ('' for a url without one)",
     lambda url: (_url_segments(url) or [""])[-1]),
    ("bare_hosts", "the hosts of {}, each without a leading 'www.'",
     lambda url: _url_host(url).removeprefix("www.")),
)
_URL_SCHEMES = ("http", "https", "https", "ftp")
_URL_HOSTS = (
    "example.com", "www.example.com", "shop.net", "www.news.org", "docs.python.org", "api.site.io",
    "blog.dev", "www.library.org", "mail.home.net",
)
_URL_PATHS = ("", "index.html", "a/b", "docs/intro", "img/cat.png", "api/v2/users", "search", "about")
_URL_QUERIES = ("", "", "q=cats", "page=2", "id=7&sort=asc", "lang=en&page=3&size=10")
# fmt: on


def _urls(rng: random.Random) -> tuple[list[str]]:
    """3-5 distinct ``"scheme://host/path?query"`` addresses (an empty path keeps its '/'): the whole
    argument tuple of the url tasks' examples."""
    count = rng.randint(3, 5)
    return (_distinct_draws(rng, count, _url),)


def _url(rng: random.Random) -> str:
    """One ``"scheme://host/path?query"`` address (an empty path keeps its '/', an empty query no '?')."""
    query = rng.choice(_URL_QUERIES)
    url = f"{rng.choice(_URL_SCHEMES)}://{rng.choice(_URL_HOSTS)}/{rng.choice(_URL_PATHS)}"
    return url + (f"?{query}" if query else "")


def url_function_prompts(seed: int = 0) -> list[str]:
    """Every url filter x change x summary task over ``urls: List[str]``, with 2-3 examples each: the
    number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_URL_FILTERS, _URL_NUMBER_CHANGES, _URL_CHANGES, _COMMA_WORD_SUMMARIES)
    return _number_and_item_prompts(random.Random(seed + 229), *parts, "urls", "List[str]", _urls, iter)


# HumanEval-shaped tasks over IPv4 addresses (``ip-functions``: ``addresses`` is a list of dotted
# quads, ``"192.168.1.10"``); a filter over the addresses, a change that makes a number (the sum of
# the four numbers, the first or the last number, the length) or a text (the first three numbers,
# the numbers reversed, every number padded to three digits, eight hexadecimal digits) of each kept
# address and a summary, composed as the list tasks are.


def _ip_numbers(address: str) -> list[int]:
    """The four numbers of a dotted-quad address, in order."""
    return [int(part) for part in address.split(".")]


def _ip_private(address: str) -> bool:
    """In 10.x.x.x, 172.16.x.x to 172.31.x.x or 192.168.x.x."""
    first, second = _ip_numbers(address)[:2]
    return first == 10 or (first == 172 and 16 <= second <= 31) or (first, second) == (192, 168)


# fmt: off
_IP_FILTERS = (  # (name part, noun phrase, keep(address))
    ("private", "the addresses in a private range (10.x.x.x, 172.16.x.x to 172.31.x.x or 192.168.x.x)",
     _ip_private),
    ("loopback", "the loopback addresses (first number 127)", lambda a: _ip_numbers(a)[0] == 127),
    ("even_last", "the addresses whose last number is even", lambda a: _ip_numbers(a)[-1] % 2 == 0),
    ("low_last", "the addresses whose last number is below 100", lambda a: _ip_numbers(a)[-1] < 100),
    ("with_zero", "the addresses with a 0 among their four numbers", lambda a: 0 in _ip_numbers(a)),
    ("low_first", "the addresses whose first number is below 128", lambda a: _ip_numbers(a)[0] < 128),
    ("addresses", "all the addresses", lambda a: True),
)
_IP_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, address -> number)
    ("number_sums", "the sums of the four numbers of {}", lambda a: sum(_ip_numbers(a))),
    ("first_numbers", "the first numbers of {}", lambda a: _ip_numbers(a)[0]),
    ("last_numbers", "the last numbers of {}", lambda a: _ip_numbers(a)[-1]),
    ("lengths", "the lengths of {}", len),
)
_IP_CHANGES = (  # (name part, phrase around the filtered noun phrase, address -> text)
    ("networks", "the first three numbers of {}, joined by dots", lambda a: a.rsplit(".", 1)[0]),
    ("reversed", "{} with their four numbers in reverse order",
     lambda a: ".".join(reversed(a.split(".")))),
    ("padded", "{} with every number padded to three digits",
     lambda a: ".".join(f"{n:03d}" for n in _ip_numbers(a))),
    ("hex", "{} as eight lower-case hexadecimal digits",
     lambda a: "".join(f"{n:02x}" for n in _ip_numbers(a))),
)
_IP_PUBLIC_FIRSTS = (8, 23, 45, 66, 93, 104, 151, 172, 203, 210)
# fmt: on


def _ip_addresses(rng: random.Random) -> tuple[list[str]]:
    """3-5 distinct dotted-quad addresses: the whole argument tuple of the ip tasks' examples."""
    count = rng.randint(3, 5)
    return (_distinct_draws(rng, count, _ip_address),)


def _ip_address(rng: random.Random) -> str:
    """One dotted-quad address: private, loopback or public about equally often, with some zeros (a
    public 172.x address may fall just outside the private 172.16-31 range)."""
    first = rng.choice((10, 192, 127, rng.choice(_IP_PUBLIC_FIRSTS), rng.choice(_IP_PUBLIC_FIRSTS)))
    second = {192: 168, 127: 0}.get(first, rng.choice((0, rng.randint(1, 40), rng.randint(1, 255))))
    rest = [rng.choice((0, 1, rng.randint(2, 254), rng.randint(2, 254))) for _ in range(2)]
    return ".".join(str(n) for n in (first, second, *rest))


def ip_function_prompts(seed: int = 0) -> list[str]:
    """Every ip filter x change x summary task over ``addresses: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_IP_FILTERS, _IP_NUMBER_CHANGES, _IP_CHANGES, _COMMA_WORD_SUMMARIES)
    return _number_and_item_prompts(
        random.Random(seed + 241), *parts, "addresses", "List[str]", _ip_addresses, iter
    )


# HumanEval-shaped tasks over points of the plane (``point-functions``: ``points`` is a list of
# ``(x, y)`` pairs of integers); a filter over the points, a change that makes a number (the
# Manhattan or squared distance from the origin, either coordinate) or a text (the quadrant, the
# compass direction from the origin, the signs, ``"x:y"``) of each kept point and a summary,
# composed as the list tasks are.


def _point_quadrant(point: tuple[int, int]) -> str:
    """'I' to 'IV' counter-clockwise from x > 0, y > 0; 'axis' for a point on an axis."""
    x, y = point
    if x == 0 or y == 0:
        return "axis"
    quadrants = {(True, True): "I", (False, True): "II", (False, False): "III", (True, False): "IV"}
    return quadrants[(x > 0, y > 0)]


_COMPASS = ("E", "NE", "N", "NW", "W", "SW", "S", "SE")  # counter-clockwise from the x-axis


def _point_direction(point: tuple[int, int]) -> str:
    """The nearest of the eight compass directions of a point seen from the origin ('O' for the
    origin; an integer point is never halfway between two, tan(22.5 degrees) being irrational)."""
    x, y = point
    if x == y == 0:
        return "O"
    return _COMPASS[round(math.degrees(math.atan2(y, x)) / 45) % 8]


def _squared_distance(point: tuple[int, int]) -> int:
    """x * x + y * y: the squared distance of a point from the origin."""
    return point[0] ** 2 + point[1] ** 2


def _sign(number: int) -> str:
    """'+', '-' or '0'."""
    return "+" if number > 0 else "-" if number < 0 else "0"


# fmt: off
_POINT_FILTERS = (  # (name part, noun phrase, keep(point))
    ("first_quadrant", "the points with both coordinates positive", lambda p: p[0] > 0 and p[1] > 0),
    ("on_axis", "the points on an axis (a coordinate of 0)", lambda p: 0 in p),
    ("diagonal", "the points on a diagonal (x equal to y or to -y)", lambda p: abs(p[0]) == abs(p[1])),
    ("near", "the points within distance 5 of the origin", lambda p: _squared_distance(p) <= 25),
    ("above", "the points above the x-axis (y positive)", lambda p: p[1] > 0),
    ("even_x", "the points whose x coordinate is even", lambda p: p[0] % 2 == 0),
    ("points", "all the points", lambda p: True),
)
_POINT_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, point -> number)
    ("manhattan", "the Manhattan distances from the origin (|x| + |y|) of {}",
     lambda p: abs(p[0]) + abs(p[1])),
    ("squared_distances", "the squared distances from the origin (x * x + y * y) of {}",
     _squared_distance),
    ("xs", "the x coordinates of {}", lambda p: p[0]),
    ("ys", "the y coordinates of {}", lambda p: p[1]),
)
_POINT_CHANGES = (  # (name part, phrase around the filtered noun phrase, point -> text)
    ("quadrants", "the quadrants of {} ('I', 'II', 'III' or 'IV'; 'axis' for a point on an axis)",
     _point_quadrant),
    ("directions", "the nearest compass directions from the origin of {} ('N', 'NE', 'E', 'SE', 'S', "
     "'SW', 'W' or 'NW'; 'O' for the origin)", _point_direction),
    ("signs", "the signs of the coordinates of {} as two characters ('+', '-' or '0', x first)",
     lambda p: _sign(p[0]) + _sign(p[1])),
    ("labels", "{} written as 'x:y'", lambda p: f"{p[0]}:{p[1]}"),
)
# fmt: on


def _point(rng: random.Random) -> tuple[int, int]:
    """One point with coordinates from -6 to 6, on an axis or a diagonal about a third of the time."""
    x = rng.choice((0, rng.randint(-6, 6), rng.randint(-6, 6), rng.randint(-6, 6)))
    y = rng.choice((0, x, -x, rng.randint(-6, 6), rng.randint(-6, 6), rng.randint(-6, 6)))
    return (x, y)


def point_function_prompts(seed: int = 0) -> list[str]:
    """Every point filter x change x summary task over ``points: List[Tuple[int, int]]``, with 2-3
    examples each: the number changes with the number summaries, the text changes with the word
    summaries (joined by commas)."""
    parts = (_POINT_FILTERS, _POINT_NUMBER_CHANGES, _POINT_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 251, parts, "points", "List[Tuple[int, int]]", _point)


# HumanEval-shaped tasks over playing cards (``card-functions``: ``cards`` is a list of texts, a rank
# ('A', '2' to '10', 'J', 'Q', 'K') followed by a suit letter ('C', 'D', 'H', 'S'), like "10H" or
# "QS"); a filter over the cards, a change that makes a number (the rank's value with the ace low or
# high, blackjack points, the text's length) or a text (the suit's name, the rank, the colour, a name
# like "Q of spades") of each kept card and a summary, composed as the list tasks are.
_CARD_RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_CARD_SUITS = {"C": "clubs", "D": "diamonds", "H": "hearts", "S": "spades"}


def _card_rank(card: str) -> str:
    """The card without its suit letter: 'A', '2' to '10', 'J', 'Q' or 'K'."""
    return card[:-1]


def _card_value(card: str) -> int:
    """The rank's value: an ace 1, '2' to '10' their number, J 11, Q 12, K 13."""
    return _CARD_RANKS.index(_card_rank(card)) + 1


def _blackjack_points(card: str) -> int:
    """An ace 11, J, Q and K 10, the other cards their number."""
    value = _card_value(card)
    return 11 if value == 1 else min(value, 10)


# fmt: off
_CARD_FILTERS = (  # (name part, noun phrase, keep(card))
    ("hearts", "the cards of hearts (suit letter 'H')", lambda c: c[-1] == "H"),
    ("red", "the red cards (hearts 'H' or diamonds 'D')", lambda c: c[-1] in "HD"),
    ("faces", "the face cards (a rank of 'J', 'Q' or 'K')", lambda c: _card_rank(c) in ("J", "Q", "K")),
    ("numbered", "the number cards (a rank from '2' to '10')", lambda c: _card_rank(c).isdigit()),
    ("even_ranked", "the cards whose rank value is even (an ace counting 1, J 11, Q 12, K 13)",
     lambda c: _card_value(c) % 2 == 0),
    ("spades", "the cards of spades (suit letter 'S')", lambda c: c[-1] == "S"),
    ("cards", "all the cards", lambda c: True),
)
_CARD_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, card -> number)
    ("values", "the rank values of {} (an ace counting 1, J 11, Q 12, K 13)", _card_value),
    ("points", "the blackjack points of {} (an ace 11, J, Q and K 10, the other cards their number)",
     _blackjack_points),
    ("high_values", "the rank values of {} with an ace counting 14 (J 11, Q 12, K 13)",
     lambda c: _card_value(c) if _card_value(c) > 1 else 14),
    ("lengths", "the lengths of the texts of {}", len),
)
_CARD_CHANGES = (  # (name part, phrase around the filtered noun phrase, card -> text)
    ("suits", "the suit names of {} ('clubs', 'diamonds', 'hearts' or 'spades')",
     lambda c: _CARD_SUITS[c[-1]]),
    ("ranks", "the ranks of {} (each card without its suit letter)", _card_rank),
    ("colors", "the colours of {} ('red' for hearts and diamonds, 'black' for clubs and spades)",
     lambda c: "red" if c[-1] in "HD" else "black"),
    ("names", "the names of {} like 'Q of spades' (the rank, ' of ' and the suit's name)",
     lambda c: f"{_card_rank(c)} of {_CARD_SUITS[c[-1]]}"),
)
# fmt: on


def _card(rng: random.Random) -> str:
    """One card, a face card about a third of the time."""
    rank = rng.choice((rng.choice(_CARD_RANKS), rng.choice(_CARD_RANKS), rng.choice(("J", "Q", "K"))))
    return rank + rng.choice(tuple(_CARD_SUITS))


def card_function_prompts(seed: int = 0) -> list[str]:
    """Every card filter x change x summary task over ``cards: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined
    by commas)."""
    parts = (_CARD_FILTERS, _CARD_NUMBER_CHANGES, _CARD_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 263, parts, "cards", "List[str]", _card)


# HumanEval-shaped tasks over squares of a chess board (``chess-functions``: ``squares`` is a list of
# texts, a file letter 'a' to 'h' followed by a rank digit '1' to '8', like "e4"); a filter over the
# squares, a change that makes a number (the rank, the file's number, the distance from 'a1' in king
# moves, the board index) or a text (the colour, the square mirrored across the middle rank or the
# middle file, the upper-case name) of each kept square and a summary, composed as the list tasks are.
_CHESS_FILES = "abcdefgh"


def _chess_file(square: str) -> int:
    """The file's number: 'a' 1 to 'h' 8."""
    return _CHESS_FILES.index(square[0]) + 1


def _chess_rank(square: str) -> int:
    """The rank: the square's digit, 1 to 8."""
    return int(square[1])


def _chess_dark(square: str) -> bool:
    """Whether the square is dark: its file's number plus its rank is even ('a1' is dark)."""
    return (_chess_file(square) + _chess_rank(square)) % 2 == 0


# fmt: off
_CHESS_FILTERS = (  # (name part, noun phrase, keep(square))
    ("dark", "the dark squares (the file's number, 'a' 1 to 'h' 8, plus the rank even, like 'a1')",
     _chess_dark),
    ("light", "the light squares (the file's number, 'a' 1 to 'h' 8, plus the rank odd, like 'b1')",
     lambda s: not _chess_dark(s)),
    ("central", "the centre squares ('d4', 'd5', 'e4' or 'e5')", lambda s: s in ("d4", "d5", "e4", "e5")),
    ("edge", "the squares on the board's edge (file 'a' or 'h', or rank 1 or 8)",
     lambda s: s[0] in "ah" or s[1] in "18"),
    ("white_half", "the squares of white's half of the board (ranks 1 to 4)", lambda s: _chess_rank(s) <= 4),
    ("kingside", "the kingside squares (files 'e' to 'h')", lambda s: s[0] in "efgh"),
    ("squares", "all the squares", lambda s: True),
)
_CHESS_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, square -> number)
    ("ranks", "the ranks (each square's digit) of {}", _chess_rank),
    ("file_numbers", "the file numbers ('a' 1 to 'h' 8) of {}", _chess_file),
    ("king_distances", "the distances from 'a1' in king moves (the larger of the file number less 1 and "
     "the rank less 1) of {}", lambda s: max(_chess_file(s), _chess_rank(s)) - 1),
    ("indices", "the board indices (8 times the rank less 1, plus the file number less 1: 'a1' 0, 'h8' "
     "63) of {}", lambda s: 8 * (_chess_rank(s) - 1) + _chess_file(s) - 1),
)
_CHESS_CHANGES = (  # (name part, phrase around the filtered noun phrase, square -> text)
    ("colors", "the colours of {} ('dark' or 'light')", lambda s: "dark" if _chess_dark(s) else "light"),
    ("mirrored_ranks", "{} mirrored across the middle rank (the rank r becomes 9 - r, 'e2' becomes 'e7')",
     lambda s: f"{s[0]}{9 - _chess_rank(s)}"),
    ("mirrored_files", "{} mirrored across the middle file ('a' becomes 'h', 'b' becomes 'g', 'c4' becomes "
     "'f4')", lambda s: f"{_CHESS_FILES[8 - _chess_file(s)]}{s[1]}"),
    ("upper", "the names of {} in upper case ('e4' becomes 'E4')", str.upper),
)
# fmt: on


def _square(rng: random.Random) -> str:
    """One square: a centre one about a seventh of the time, one on the board's edge about three times
    in five (each coordinate drawn from a uniform pick, an edge pick or a centre pick)."""
    files = (rng.choice(_CHESS_FILES), rng.choice(_CHESS_FILES), rng.choice("ah"), rng.choice("de"))
    file = rng.choice(files)
    rank = rng.choice((rng.randint(1, 8), rng.randint(1, 8), rng.choice((1, 8)), rng.choice((4, 5))))
    return f"{file}{rank}"


def chess_function_prompts(seed: int = 0) -> list[str]:
    """Every chess filter x change x summary task over ``squares: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined
    by commas)."""
    parts = (_CHESS_FILTERS, _CHESS_NUMBER_CHANGES, _CHESS_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 271, parts, "squares", "List[str]", _square)


# HumanEval-shaped tasks over musical notes (``note-functions``: ``notes`` is a list of texts, a note
# name 'C' to 'B', sharps written '#', followed by an octave digit, like "F#3"); a filter over the
# notes, a change that makes a number (the octave, the semitone within the octave, the MIDI number,
# the distance from middle C) or a text (the name alone, the note an octave or a semitone higher,
# lower case) of each kept note and a summary, composed as the list tasks are.
_NOTE_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")


def _note_octave(note: str) -> int:
    """The octave: the note's last digit."""
    return int(note[-1])


def _note_semitone(note: str) -> int:
    """The semitone within the octave: 'C' 0, 'C#' 1, ... 'B' 11."""
    return _NOTE_NAMES.index(note[:-1])


def _midi_number(note: str) -> int:
    """12 times the octave plus 1, plus the semitone: 'C4' (middle C) 60, 'A4' 69."""
    return 12 * (_note_octave(note) + 1) + _note_semitone(note)


def _note_of_midi(number: int) -> str:
    """The note whose MIDI number is ``number`` (sharps for the black keys)."""
    return f"{_NOTE_NAMES[number % 12]}{number // 12 - 1}"


# fmt: off
_NOTE_FILTERS = (  # (name part, noun phrase, keep(note))
    ("sharp", "the sharp notes (a name with '#', like 'F#3')", lambda n: "#" in n),
    ("natural", "the natural notes (a name without '#', like 'E4')", lambda n: "#" not in n),
    ("middle_octave", "the notes of octave 4 (the last digit 4, like 'A4')", lambda n: _note_octave(n) == 4),
    ("above_middle_c", "the notes above middle C 'C4' (a MIDI number over 60)",
     lambda n: _midi_number(n) > 60),
    ("low", "the notes of octave 3 or lower", lambda n: _note_octave(n) <= 3),
    ("c_major_chord", "the notes of a C major chord (a name of 'C', 'E' or 'G', in any octave)",
     lambda n: n[:-1] in ("C", "E", "G")),
    ("notes", "all the notes", lambda n: True),
)
_NOTE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, note -> number)
    ("octaves", "the octaves of {} (each note's last digit)", _note_octave),
    ("semitones", "the semitones of {} within their octave ('C' 0, 'C#' 1, 'D' 2, ... 'B' 11)",
     _note_semitone),
    ("midi_numbers", "the MIDI numbers of {} (12 times the octave plus 1, plus the semitone from 'C' 0 to "
     "'B' 11: 'C4' 60, 'A4' 69)", _midi_number),
    ("steps_from_middle_c", "the distances of {} from middle C 'C4' in semitones (negative below it, "
     "'A4' 9, 'B3' -1)", lambda n: _midi_number(n) - 60),
)
_NOTE_CHANGES = (  # (name part, phrase around the filtered noun phrase, note -> text)
    ("names", "the names of {} without their octave ('F#3' becomes 'F#')", lambda n: n[:-1]),
    ("octave_up", "{} one octave higher ('C4' becomes 'C5')", lambda n: f"{n[:-1]}{_note_octave(n) + 1}"),
    ("semitone_up", "{} one semitone higher ('E4' becomes 'F4', 'F4' 'F#4', 'B3' 'C4')",
     lambda n: _note_of_midi(_midi_number(n) + 1)),
    ("lower", "{} in lower case ('F#3' becomes 'f#3')", str.lower),
)
# fmt: on


def _note(rng: random.Random) -> str:
    """One note from octave 2 to 6, octave 4 and the names 'C', 'E' and 'G' drawn more often."""
    name = rng.choice((rng.choice(_NOTE_NAMES), rng.choice(_NOTE_NAMES), rng.choice(("C", "E", "G"))))
    octave = rng.choice((rng.randint(2, 6), rng.randint(3, 5), 4))
    return f"{name}{octave}"


def note_function_prompts(seed: int = 0) -> list[str]:
    """Every note filter x change x summary task over ``notes: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined
    by commas)."""
    parts = (_NOTE_FILTERS, _NOTE_NUMBER_CHANGES, _NOTE_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 283, parts, "notes", "List[str]", _note)


# HumanEval-shaped tasks over file sizes (``size-functions``: ``sizes`` is a list of texts, a whole
# number and a unit 'B', 'KB', 'MB' or 'GB' with no space, like "640KB", 1 KB being 1024 bytes); a
# filter over the sizes, a change that makes a number (the number alone, the unit's power of 1024, the
# size in whole kilobytes or megabytes) or a text (the unit alone, the size doubled, a space before
# the unit, lower case) of each kept size and a summary, composed as the list tasks are.
_SIZE_UNITS = ("B", "KB", "MB", "GB")


def _size_number(size: str) -> int:
    """The number before the unit: '640KB' 640."""
    return int(size.rstrip("BKMG"))


def _size_unit(size: str) -> str:
    """The unit after the number: '640KB' 'KB'."""
    return size.lstrip("0123456789")


def _number_and_unit_changes(
    example: str,
    number_of: Callable[[str], int],
    unit_of: Callable[[str], str],
    second: tuple,
    case: Callable[[str], str] = str.lower,
) -> tuple:
    """The text changes of an item written as a number and a unit ('640KB', '-4C'): its unit alone,
    ``second`` (the source's own change), a space before the unit and ``case`` (``str.lower`` or,
    for units already in lower case like 'km', ``str.upper``), each phrased with ``example``."""
    number, unit = number_of(example), unit_of(example)
    return (
        ("units", f"the units of {{}} ('{example}' becomes '{unit}')", unit_of),
        second,
        (
            "spaced",
            f"{{}} with a space before the unit ('{example}' becomes '{number} {unit}')",
            lambda item: f"{number_of(item)} {unit_of(item)}",
        ),
        (case.__name__, f"{{}} in {case.__name__} case ('{example}' becomes '{case(example)}')", case),
    )


def _size_bytes(size: str) -> int:
    """The size in bytes, 1024 to a unit: '2KB' 2048."""
    return _size_number(size) * 1024 ** _SIZE_UNITS.index(_size_unit(size))


# fmt: off
_SIZE_FILTERS = (  # (name part, noun phrase, keep(size))
    ("kb", "the sizes in kilobytes (a unit of 'KB', like '640KB')", lambda s: _size_unit(s) == "KB"),
    ("mb", "the sizes in megabytes (a unit of 'MB', like '12MB')", lambda s: _size_unit(s) == "MB"),
    ("over_100_mb", "the sizes over 100 MB (1 KB is 1024 bytes, 1 MB 1024 KB, 1 GB 1024 MB)",
     lambda s: _size_bytes(s) > 100 * 1024**2),
    ("under_100_kb", "the sizes under 100 KB (1 KB is 1024 bytes)", lambda s: _size_bytes(s) < 100 * 1024),
    ("round", "the sizes whose number is a multiple of 100 (like '200MB')",
     lambda s: _size_number(s) % 100 == 0),
    ("even", "the sizes whose number is even (like '64GB')", lambda s: _size_number(s) % 2 == 0),
    ("sizes", "all the sizes", lambda s: True),
)
_SIZE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, size -> number)
    ("numbers", "the numbers (each size without its unit: '640KB' 640) of {}", _size_number),
    ("unit_powers", "the unit powers of {} (the power of 1024 its unit is: 'B' 0, 'KB' 1, 'MB' 2, 'GB' 3)",
     lambda s: _SIZE_UNITS.index(_size_unit(s))),
    ("kilobytes", "{} in whole kilobytes (1 KB is 1024 bytes, 1 MB 1024 KB, 1 GB 1024 MB; rounded down, "
     "'512B' 0, '3MB' 3072)", lambda s: _size_bytes(s) // 1024),
    ("megabytes", "{} in whole megabytes (1 MB is 1024 KB, 1 GB 1024 MB; rounded down, '640KB' 0, '2GB' "
     "2048)", lambda s: _size_bytes(s) // 1024**2),
)
_SIZE_CHANGES = _number_and_unit_changes(  # (name part, phrase around the noun phrase, size -> text)
    "640KB", _size_number, _size_unit,
    ("doubled", "{} doubled in the same unit ('640KB' becomes '1280KB')",
     lambda s: f"{2 * _size_number(s)}{_size_unit(s)}"),
)
# fmt: on


def _size(rng: random.Random) -> str:
    """One size: a number from 1 to 999 (round numbers and powers of two drawn more often) and a unit."""
    drawn = (rng.randint(1, 999), rng.choice((100, 200, 250, 300, 500, 800)), 2 ** rng.randint(1, 9))
    number = rng.choice(drawn)
    return f"{number}{rng.choice(_SIZE_UNITS)}"


def size_function_prompts(seed: int = 0) -> list[str]:
    """Every size filter x change x summary task over ``sizes: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined
    by commas)."""
    parts = (_SIZE_FILTERS, _SIZE_NUMBER_CHANGES, _SIZE_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 293, parts, "sizes", "List[str]", _size)


# HumanEval-shaped tasks over temperatures (``temperature-functions``: ``temperatures`` is a list of
# texts, a whole number, possibly negative, and a unit 'C' or 'F' with no space, like "-4C" or "75F");
# a filter over the temperatures, a change that makes a number (the number alone, its absolute value,
# the temperature in whole degrees Celsius or Fahrenheit) or a text (the unit alone, one degree warmer,
# a space before the unit, lower case) of each kept temperature and a summary, composed as the list
# tasks are.
def _temperature_number(temperature: str) -> int:
    """The number before the unit: '-4C' -4."""
    return int(temperature[:-1])


def _temperature_unit(temperature: str) -> str:
    """The unit after the number: '-4C' 'C'."""
    return temperature[-1]


def _temperature_celsius(temperature: str) -> int:
    """The temperature in whole degrees Celsius, rounded down: '75F' 23 ((75 - 32) * 5 / 9 = 23.9)."""
    number = _temperature_number(temperature)
    return number if _temperature_unit(temperature) == "C" else (number - 32) * 5 // 9


def _temperature_fahrenheit(temperature: str) -> int:
    """The temperature in whole degrees Fahrenheit, rounded down: '-4C' 24 (-4 * 9 / 5 + 32 = 24.8)."""
    number = _temperature_number(temperature)
    return number if _temperature_unit(temperature) == "F" else number * 9 // 5 + 32


# fmt: off
_TEMPERATURE_FILTERS = (  # (name part, noun phrase, keep(temperature))
    ("in_celsius", "the temperatures in degrees Celsius (a unit of 'C', like '23C')",
     lambda t: _temperature_unit(t) == "C"),
    ("in_fahrenheit", "the temperatures in degrees Fahrenheit (a unit of 'F', like '75F')",
     lambda t: _temperature_unit(t) == "F"),
    ("freezing", "the temperatures below freezing (under 0 degrees Celsius, that is under 32 degrees "
     "Fahrenheit)", lambda t: _temperature_number(t) < (0 if _temperature_unit(t) == "C" else 32)),
    ("hot", "the temperatures over 30 degrees Celsius (that is over 86 degrees Fahrenheit)",
     lambda t: _temperature_number(t) > (30 if _temperature_unit(t) == "C" else 86)),
    ("negative", "the temperatures whose number is negative (like '-4C')",
     lambda t: _temperature_number(t) < 0),
    ("even", "the temperatures whose number is even (like '-12F')",
     lambda t: _temperature_number(t) % 2 == 0),
    ("temperatures", "all the temperatures", lambda t: True),
)
_TEMPERATURE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, temperature -> number)
    ("numbers", "the numbers (each temperature without its unit: '-4C' -4) of {}", _temperature_number),
    ("magnitudes", "the absolute values of the numbers of {} ('-4C' 4)",
     lambda t: abs(_temperature_number(t))),
    ("degrees_celsius", "{} in whole degrees Celsius (C = (F - 32) * 5 / 9, rounded down: '75F' 23, "
     "'23C' 23)", _temperature_celsius),
    ("degrees_fahrenheit", "{} in whole degrees Fahrenheit (F = C * 9 / 5 + 32, rounded down: '-4C' 24, "
     "'75F' 75)", _temperature_fahrenheit),
)
_TEMPERATURE_CHANGES = _number_and_unit_changes(  # (name part, phrase, temperature -> text)
    "-4C", _temperature_number, _temperature_unit,
    ("warmer", "{} one degree warmer in the same unit ('-4C' becomes '-3C')",
     lambda t: f"{_temperature_number(t) + 1}{_temperature_unit(t)}"),
)
# fmt: on


def _temperature(rng: random.Random) -> str:
    """One temperature: -25 to 40 degrees Celsius or -10 to 105 degrees Fahrenheit, so that freezing,
    hot and negative temperatures all come up."""
    if rng.random() < 0.5:
        return f"{rng.randint(-25, 40)}C"
    return f"{rng.randint(-10, 105)}F"


def temperature_function_prompts(seed: int = 0) -> list[str]:
    """Every temperature filter x change x summary task over ``temperatures: List[str]``, with 2-3
    examples each: the number changes with the number summaries, the text changes with the word
    summaries (joined by commas)."""
    parts = (_TEMPERATURE_FILTERS, _TEMPERATURE_NUMBER_CHANGES, _TEMPERATURE_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 311, parts, "temperatures", "List[str]", _temperature)


# HumanEval-shaped tasks over distances (``distance-functions``: ``distances`` is a list of texts, a
# whole number and a unit 'km' or 'mi' with no space, like "12km" or "7mi", a mile being 1609 metres);
# a filter over the distances, a change that makes a number (the number alone, the distance in whole
# metres, kilometres or miles) or a text (the unit alone, one unit longer, a space before the unit,
# upper case) of each kept distance and a summary, composed as the list tasks are.
def _distance_number(distance: str) -> int:
    """The number before the unit: '12km' 12."""
    return int(distance[:-2])


def _distance_unit(distance: str) -> str:
    """The unit after the number: '12km' 'km'."""
    return distance[-2:]


def _distance_metres(distance: str) -> int:
    """The distance in metres, a mile being 1609 metres: '3mi' 4827."""
    return _distance_number(distance) * (1000 if _distance_unit(distance) == "km" else 1609)


# fmt: off
_DISTANCE_FILTERS = (  # (name part, noun phrase, keep(distance))
    ("in_km", "the distances in kilometres (a unit of 'km', like '12km')",
     lambda d: _distance_unit(d) == "km"),
    ("in_miles", "the distances in miles (a unit of 'mi', like '7mi')", lambda d: _distance_unit(d) == "mi"),
    ("long", "the distances over 100 kilometres (a mile is 1609 metres)",
     lambda d: _distance_metres(d) > 100_000),
    ("short", "the distances under 10 kilometres (a mile is 1609 metres)",
     lambda d: _distance_metres(d) < 10_000),
    ("round", "the distances whose number is a multiple of 10 (like '40mi')",
     lambda d: _distance_number(d) % 10 == 0),
    ("odd", "the distances whose number is odd (like '7mi')", lambda d: _distance_number(d) % 2 == 1),
    ("distances", "all the distances", lambda d: True),
)
_DISTANCE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, distance -> number)
    ("numbers", "the numbers (each distance without its unit: '12km' 12) of {}", _distance_number),
    ("metres", "{} in metres (1 km is 1000 metres, 1 mi 1609: '3mi' 4827)", _distance_metres),
    ("whole_km", "{} in whole kilometres, rounded down ('3mi' 4, '12km' 12)",
     lambda d: _distance_metres(d) // 1000),
    ("whole_miles", "{} in whole miles, rounded down ('12km' 7, '7mi' 7)",
     lambda d: _distance_metres(d) // 1609),
)
_DISTANCE_CHANGES = _number_and_unit_changes(  # (name part, phrase, distance -> text)
    "12km", _distance_number, _distance_unit,
    ("longer", "{} one unit longer in the same unit ('12km' becomes '13km')",
     lambda d: f"{_distance_number(d) + 1}{_distance_unit(d)}"),
    case=str.upper,
)
# fmt: on


def _distance(rng: random.Random) -> str:
    """One distance: 1 to 300 kilometres or miles, short ones (under 10) a quarter of the time and
    multiples of 10 a fifth, so that every filter keeps some."""
    roll = rng.random()
    if roll < 0.25:
        number = rng.randint(1, 9)
    elif roll < 0.45:
        number = 10 * rng.randint(1, 30)
    else:
        number = rng.randint(1, 300)
    return f"{number}{rng.choice(('km', 'mi'))}"


def distance_function_prompts(seed: int = 0) -> list[str]:
    """Every distance filter x change x summary task over ``distances: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the text changes with the word summaries
    (joined by commas)."""
    parts = (_DISTANCE_FILTERS, _DISTANCE_NUMBER_CHANGES, _DISTANCE_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 313, parts, "distances", "List[str]", _distance)


# HumanEval-shaped tasks over percentages (``percent-functions``: ``percents`` is a list of texts, a
# whole number from 0 to 100 and a percent sign, like "45%"); a filter over the percentages, a change
# that makes a number (the number alone, the rest to 100, the share of 200, whole tenths) or a text (a
# decimal, the word 'percent', one point higher, the rest to 100) of each kept percentage and a
# summary, composed as the list tasks are.
def _percent_number(percent: str) -> int:
    """The number before the percent sign: '45%' 45."""
    return int(percent[:-1])


# fmt: off
_PERCENT_FILTERS = (  # (name part, noun phrase, keep(percent))
    ("high", "the percentages over 50 (like '75%')", lambda p: _percent_number(p) > 50),
    ("low", "the percentages under 10 (like '5%')", lambda p: _percent_number(p) < 10),
    ("passing", "the percentages of at least 60 (like '60%')", lambda p: _percent_number(p) >= 60),
    ("round", "the percentages whose number is a multiple of 10 (like '40%')",
     lambda p: _percent_number(p) % 10 == 0),
    ("quarters", "the percentages whose number is a multiple of 25 (like '75%')",
     lambda p: _percent_number(p) % 25 == 0),
    ("odd", "the percentages whose number is odd (like '7%')", lambda p: _percent_number(p) % 2 == 1),
    ("percents", "all the percentages", lambda p: True),
)
_PERCENT_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, percent -> number)
    ("numbers", "the numbers (each percentage without its sign: '45%' 45) of {}", _percent_number),
    ("rests", "the rest to 100 of each of {} ('45%' 55)", lambda p: 100 - _percent_number(p)),
    ("of_200", "{} taken of 200 ('45%' 90, '5%' 10)", lambda p: 2 * _percent_number(p)),
    ("tenths", "{} in whole tenths, rounded down ('45%' 4, '100%' 10)", lambda p: _percent_number(p) // 10),
)
_PERCENT_CHANGES = (  # (name part, phrase, percent -> text)
    ("decimals", "{} as decimals with two places ('45%' becomes '0.45', '100%' '1.00')",
     lambda p: f"{_percent_number(p) / 100:.2f}"),
    ("spelled", "{} with the word percent ('45%' becomes '45 percent')",
     lambda p: f"{_percent_number(p)} percent"),
    ("higher", "{} one point higher ('45%' becomes '46%')", lambda p: f"{_percent_number(p) + 1}%"),
    ("rest_percents", "the rest to 100 of each of {} ('45%' becomes '55%')",
     lambda p: f"{100 - _percent_number(p)}%"),
)
# fmt: on


def _percent(rng: random.Random) -> str:
    """One percentage from 0% to 100%: under 10 a fifth of the time, a multiple of 25 or of 10 a third,
    so that every filter keeps some."""
    roll = rng.random()
    if roll < 0.2:
        number = rng.randint(0, 9)
    elif roll < 0.35:
        number = 25 * rng.randint(0, 4)
    elif roll < 0.55:
        number = 10 * rng.randint(0, 10)
    else:
        number = rng.randint(0, 100)
    return f"{number}%"


def percent_function_prompts(seed: int = 0) -> list[str]:
    """Every percentage filter x change x summary task over ``percents: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the text changes with the word summaries
    (joined by commas)."""
    parts = (_PERCENT_FILTERS, _PERCENT_NUMBER_CHANGES, _PERCENT_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 317, parts, "percents", "List[str]", _percent)


# HumanEval-shaped tasks over airplane seats (``seat-functions``: ``seats`` is a list of texts, a row
# from 1 to 40 and a seat letter from 'A' to 'F', like "12C"); a filter over the seats, a change that
# makes a number (the row, the letter's place, the seat's number from the front, the rows behind it) or
# a text (the letter, one row back, lower case, a dash) of each kept seat and a summary, composed as the
# list tasks are.
def _seat_row(seat: str) -> int:
    """The row before the letter: '12C' 12."""
    return int(seat[:-1])


def _seat_place(seat: str) -> int:
    """The letter's place in its row, 'A' being 1: '12C' 3."""
    return "ABCDEF".index(seat[-1]) + 1


# fmt: off
_SEAT_FILTERS = (  # (name part, noun phrase, keep(seat))
    ("window", "the window seats (letter 'A' or 'F')", lambda s: s[-1] in "AF"),
    ("aisle", "the aisle seats (letter 'C' or 'D')", lambda s: s[-1] in "CD"),
    ("middle", "the middle seats (letter 'B' or 'E')", lambda s: s[-1] in "BE"),
    ("front", "the seats in rows under 10", lambda s: _seat_row(s) < 10),
    ("back", "the seats in rows over 30", lambda s: _seat_row(s) > 30),
    ("even_rows", "the seats in even rows (like '12C')", lambda s: _seat_row(s) % 2 == 0),
    ("seats", "all the seats", lambda s: True),
)
_SEAT_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, seat -> number)
    ("rows", "the rows (each seat without its letter: '12C' 12) of {}", _seat_row),
    ("places", "the places in their row of {} ('A' is 1, 'F' 6: '12C' 3)", _seat_place),
    ("numbers", "the seat numbers counted from the front, six to a row, of {} ('1A' 1, '2C' 9)",
     lambda s: 6 * (_seat_row(s) - 1) + _seat_place(s)),
    ("rows_behind", "the rows behind each of {} in a 40-row cabin ('12C' 28)", lambda s: 40 - _seat_row(s)),
)
_SEAT_CHANGES = (  # (name part, phrase, seat -> text)
    ("letters", "the letters of {} ('12C' becomes 'C')", lambda s: s[-1]),
    ("one_back", "{} one row further back ('12C' becomes '13C')", lambda s: f"{_seat_row(s) + 1}{s[-1]}"),
    ("lower", "{} in lower case ('12C' becomes '12c')", str.lower),
    ("dashed", "{} with a dash between row and letter ('12C' becomes '12-C')",
     lambda s: f"{_seat_row(s)}-{s[-1]}"),
)
# fmt: on


def _seat(rng: random.Random) -> str:
    """One seat: rows under 10 and over 30 about a quarter of the time each, so that every filter
    keeps some."""
    roll = rng.random()
    if roll < 0.25:
        row = rng.randint(1, 9)
    elif roll < 0.5:
        row = rng.randint(31, 40)
    else:
        row = rng.randint(1, 40)
    return f"{row}{rng.choice('ABCDEF')}"


def seat_function_prompts(seed: int = 0) -> list[str]:
    """Every seat filter x change x summary task over ``seats: List[str]``, with 2-3 examples each: the
    number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_SEAT_FILTERS, _SEAT_NUMBER_CHANGES, _SEAT_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 331, parts, "seats", "List[str]", _seat)


# HumanEval-shaped tasks over recipe lines (``ingredient-functions``: ``ingredients`` is a list of
# texts, a whole quantity, a unit 'cup' or 'cups', 'tbsp' or 'tsp' and one word naming the
# ingredient, like "2 cups flour"); a filter over the lines, a change that makes a number (the
# quantity, twice it, teaspoons, the name's letters) or a text (the name, the quantity doubled, the
# unit, upper case) of each kept line and a summary, composed as the list tasks are.
_INGREDIENT_NAMES = ("flour", "sugar", "salt", "butter", "milk", "rice", "oats", "honey", "water", "cocoa")
_SWEET_INGREDIENTS = ("sugar", "honey", "cocoa")
_TEASPOONS = {"cup": 48, "tbsp": 3, "tsp": 1}  # a cup is 16 tablespoons, a tablespoon 3 teaspoons


def _ingredient_parts(line: str) -> tuple[int, str, str]:
    """The quantity, the unit ('cups' read as 'cup') and the name: '2 cups flour' (2, 'cup', 'flour')."""
    quantity, unit, name = line.split(" ")
    return int(quantity), unit.removesuffix("s") if unit.startswith("cup") else unit, name


def _ingredient_line(quantity: int, unit: str, name: str) -> str:
    """A recipe line, 'cup' plural past one: (2, 'cup', 'flour') '2 cups flour'."""
    return f"{quantity} {unit}{'s' if unit == 'cup' and quantity != 1 else ''} {name}"


def _doubled_ingredient(line: str) -> str:
    """The line with twice the quantity: '1 cup milk' '2 cups milk'."""
    quantity, unit, name = _ingredient_parts(line)
    return _ingredient_line(2 * quantity, unit, name)


# fmt: off
_INGREDIENT_FILTERS = (  # (name part, noun phrase, keep(line))
    ("cups", "the lines measured in cups", lambda i: _ingredient_parts(i)[1] == "cup"),
    ("spoons", "the lines measured in spoons ('tbsp' or 'tsp')", lambda i: _ingredient_parts(i)[1] != "cup"),
    ("large", "the lines with a quantity over 4", lambda i: _ingredient_parts(i)[0] > 4),
    ("single", "the lines with a quantity of 1", lambda i: _ingredient_parts(i)[0] == 1),
    ("sweet", "the sweet lines (sugar, honey or cocoa)",
     lambda i: _ingredient_parts(i)[2] in _SWEET_INGREDIENTS),
    ("even", "the lines with an even quantity", lambda i: _ingredient_parts(i)[0] % 2 == 0),
    ("ingredients", "all the lines", lambda i: True),
)
_INGREDIENT_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, line -> number)
    ("quantities", "the quantities ('2 cups flour' 2) of {}", lambda i: _ingredient_parts(i)[0]),
    ("doubled", "twice the quantities of {} ('2 cups flour' 4)", lambda i: 2 * _ingredient_parts(i)[0]),
    ("teaspoons", "{} in teaspoons (a cup is 48, a tbsp 3: '2 tbsp salt' 6)",
     lambda i: _ingredient_parts(i)[0] * _TEASPOONS[_ingredient_parts(i)[1]]),
    ("name_lengths", "the lengths of the ingredient names of {} ('2 cups flour' 5)",
     lambda i: len(_ingredient_parts(i)[2])),
)
_INGREDIENT_CHANGES = (  # (name part, phrase, line -> text)
    ("names", "the ingredients of {} ('2 cups flour' becomes 'flour')", lambda i: _ingredient_parts(i)[2]),
    ("double", "{} with the quantity doubled ('1 cup milk' becomes '2 cups milk')", _doubled_ingredient),
    ("units", "the units of {} ('2 cups flour' becomes 'cups')", lambda i: i.split(" ")[1]),
    ("upper", "{} in upper case ('2 cups flour' becomes '2 CUPS FLOUR')", str.upper),
)
# fmt: on


def _ingredient(rng: random.Random) -> str:
    """One recipe line: a quantity of 1 a quarter of the time, else 2 to 12, in cups, tbsp or tsp."""
    quantity = 1 if rng.random() < 0.25 else rng.randint(2, 12)
    return _ingredient_line(quantity, rng.choice(tuple(_TEASPOONS)), rng.choice(_INGREDIENT_NAMES))


def ingredient_function_prompts(seed: int = 0) -> list[str]:
    """Every recipe-line filter x change x summary task over ``ingredients: List[str]``, with 2-3
    examples each: the number changes with the number summaries, the text changes with the word
    summaries (joined by commas)."""
    parts = (_INGREDIENT_FILTERS, _INGREDIENT_NUMBER_CHANGES, _INGREDIENT_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 337, parts, "ingredients", "List[str]", _ingredient)


# HumanEval-shaped tasks over football results (``match-functions``: ``results`` is a list of texts,
# the home side's goals, a dash and the away side's, like "3-1"); a filter over the results, a change
# that makes a number (total, difference, home goals, home points) or a text (reversed, spaced, the
# winner, one more home goal) of each kept result and a summary, composed as the list tasks are.
def _goals(result: str) -> tuple[int, int]:
    """The home and away goals: '3-1' (3, 1)."""
    home, away = result.split("-")
    return int(home), int(away)


def _home_points(result: str) -> int:
    """The home side's league points: 3 for a win, 1 for a draw, 0 for a loss."""
    home, away = _goals(result)
    return 3 if home > away else 1 if home == away else 0


def _winner(result: str) -> str:
    """'home', 'away' or 'draw'."""
    home, away = _goals(result)
    return "home" if home > away else "away" if away > home else "draw"


# fmt: off
_MATCH_FILTERS = (  # (name part, noun phrase, keep(result))
    ("home_wins", "the home wins (more goals before the dash, like '3-1')",
     lambda r: _goals(r)[0] > _goals(r)[1]),
    ("away_wins", "the away wins (more goals after the dash, like '0-2')",
     lambda r: _goals(r)[1] > _goals(r)[0]),
    ("draws", "the draws (like '1-1')", lambda r: _goals(r)[0] == _goals(r)[1]),
    ("high_scoring", "the results with more than four goals in all", lambda r: sum(_goals(r)) > 4),
    ("clean_sheets", "the results where a side scored no goal (like '2-0')", lambda r: 0 in _goals(r)),
    ("even_totals", "the results with an even number of goals in all", lambda r: sum(_goals(r)) % 2 == 0),
    ("results", "all the results", lambda r: True),
)
_MATCH_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, result -> number)
    ("totals", "the goals in each of {} ('3-1' 4)", lambda r: sum(_goals(r))),
    ("margins", "the home side's goals minus the away side's in each of {} ('1-3' -2)",
     lambda r: _goals(r)[0] - _goals(r)[1]),
    ("home_goals", "the home side's goals (before the dash: '3-1' 3) in each of {}", lambda r: _goals(r)[0]),
    ("home_points", "the home side's points (3 for a win, 1 for a draw, 0 for a loss) in each of {}",
     _home_points),
)
_MATCH_CHANGES = (  # (name part, phrase, result -> text)
    ("reversed", "{} from the away side ('3-1' becomes '1-3')", lambda r: f"{_goals(r)[1]}-{_goals(r)[0]}"),
    ("spaced", "{} with spaces around the dash ('3-1' becomes '3 - 1')", lambda r: r.replace("-", " - ")),
    ("winners", "the winners of {} ('home', 'away' or 'draw')", _winner),
    ("one_more", "{} with one more home goal ('3-1' becomes '4-1')",
     lambda r: f"{_goals(r)[0] + 1}-{_goals(r)[1]}"),
)
# fmt: on


def _match(rng: random.Random) -> str:
    """One result: 0 to 5 goals a side, a draw a fifth of the time."""
    home = rng.randint(0, 5)
    return f"{home}-{home if rng.random() < 0.2 else rng.randint(0, 5)}"


def match_function_prompts(seed: int = 0) -> list[str]:
    """Every result filter x change x summary task over ``results: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_MATCH_FILTERS, _MATCH_NUMBER_CHANGES, _MATCH_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 347, parts, "results", "List[str]", _match)


# HumanEval-shaped tasks over dice rolls in tabletop notation (``dice-functions``: ``rolls`` is a list
# of texts, a count of dice, 'd', their sides and an optional bonus, like "2d6+3"); a filter over the
# rolls, a change that makes a number (lowest and highest total, dice, bonus) or a text (twice the dice,
# no bonus, the die, upper case) of each kept roll and a summary, composed as the list tasks are.
_DIE_SIDES = (4, 6, 8, 10, 12, 20)


def _dice(roll: str) -> tuple[int, int, int]:
    """The count of dice, their sides and the bonus (0 without one): '2d6+3' (2, 6, 3)."""
    dice, _, bonus = roll.partition("+")
    count, sides = dice.split("d")
    return int(count), int(sides), int(bonus or 0)


def _roll(count: int, sides: int, bonus: int) -> str:
    """The roll's notation, the bonus left out when it is 0: (2, 6, 0) '2d6'."""
    return f"{count}d{sides}{f'+{bonus}' if bonus else ''}"


# fmt: off
_DICE_FILTERS = (  # (name part, noun phrase, keep(roll))
    ("d6", "the rolls of six-sided dice (like '2d6')", lambda r: _dice(r)[1] == 6),
    ("single", "the rolls of one die (like '1d20')", lambda r: _dice(r)[0] == 1),
    ("with_bonus", "the rolls with a bonus (like '2d6+3')", lambda r: _dice(r)[2] > 0),
    ("no_bonus", "the rolls with no bonus (like '3d8')", lambda r: _dice(r)[2] == 0),
    ("big_dice", "the rolls of dice with more than 8 sides", lambda r: _dice(r)[1] > 8),
    ("even_counts", "the rolls of an even number of dice", lambda r: _dice(r)[0] % 2 == 0),
    ("rolls", "all the rolls", lambda r: True),
)
_DICE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, roll -> number)
    ("lowest", "the lowest total (every die a 1: '2d6+3' 5) of each of {}",
     lambda r: _dice(r)[0] + _dice(r)[2]),
    ("highest", "the highest total (every die its top side: '2d6+3' 15) of each of {}",
     lambda r: _dice(r)[0] * _dice(r)[1] + _dice(r)[2]),
    ("counts", "the number of dice in each of {} ('2d6+3' 2)", lambda r: _dice(r)[0]),
    ("bonuses", "the bonus of each of {} ('2d6+3' 3, 0 with no bonus)", lambda r: _dice(r)[2]),
)
_DICE_CHANGES = (  # (name part, phrase, roll -> text)
    ("doubled", "{} with twice the dice ('2d6+3' becomes '4d6+3')",
     lambda r: _roll(2 * _dice(r)[0], *_dice(r)[1:])),
    ("bare", "{} without the bonus ('2d6+3' becomes '2d6')", lambda r: r.partition("+")[0]),
    ("dies", "the die of each of {} ('2d6+3' becomes 'd6')", lambda r: f"d{_dice(r)[1]}"),
    ("upper", "{} in upper case ('2d6+3' becomes '2D6+3')", str.upper),
)
# fmt: on


def _dice_roll(rng: random.Random) -> str:
    """One roll: 1 to 4 dice of 4 to 20 sides, a bonus of 1 to 5 half the time."""
    return _roll(rng.randint(1, 4), rng.choice(_DIE_SIDES), rng.randint(1, 5) if rng.random() < 0.5 else 0)


def dice_function_prompts(seed: int = 0) -> list[str]:
    """Every dice-roll filter x change x summary task over ``rolls: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_DICE_FILTERS, _DICE_NUMBER_CHANGES, _DICE_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 349, parts, "rolls", "List[str]", _dice_roll)


# HumanEval-shaped tasks over letter grades (``grade-functions``: ``grades`` is a list of texts, a
# letter A to D or F and for A to D an optional '+' or '-', like "B+"); a filter over the grades, a
# change that makes a number (letter points, points in tenths, steps above an F, the sign) or a text
# (the letter, a step up, lower case, the sign in words) of each kept grade and a summary, composed as
# the list tasks are.
_GRADE_STEPS = ("F", "D-", "D", "D+", "C-", "C", "C+", "B-", "B", "B+", "A-", "A", "A+")  # lowest first
_LETTER_POINTS = {"A": 4, "B": 3, "C": 2, "D": 1, "F": 0}
_SIGN_VALUES = {"+": 1, "-": -1, "": 0}
_SIGN_WORDS = {"+": "plus", "-": "minus", "": "none"}


def _grade_sign(grade: str) -> str:
    """'+', '-' or '' (no sign): 'B+' '+'."""
    return grade[1:]


# fmt: off
_GRADE_FILTERS = (  # (name part, noun phrase, keep(grade))
    ("passing", "the grades of C- or better", lambda g: _GRADE_STEPS.index(g) >= _GRADE_STEPS.index("C-")),
    ("a_grades", "the A grades ('A+', 'A' or 'A-')", lambda g: g[0] == "A"),
    ("plus", "the grades with a plus (like 'B+')", lambda g: _grade_sign(g) == "+"),
    ("minus", "the grades with a minus (like 'C-')", lambda g: _grade_sign(g) == "-"),
    ("unsigned", "the grades with no sign (like 'B' or 'F')", lambda g: _grade_sign(g) == ""),
    ("low", "the D and F grades (any sign)", lambda g: g[0] in "DF"),
    ("grades", "all the grades", lambda g: True),
)
_GRADE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, grade -> number)
    ("points", "the letter points (A 4, B 3, C 2, D 1, F 0; the sign does not count) of {}",
     lambda g: _LETTER_POINTS[g[0]]),
    ("tenths", "the points in tenths (the letter's points times 10, a plus adds 3 and a minus takes 3: "
     "'B+' 33) of {}", lambda g: 10 * _LETTER_POINTS[g[0]] + 3 * _SIGN_VALUES[_grade_sign(g)]),
    ("steps", "the steps above an F (F 0, D- 1, D 2, D+ 3, C- 4, ... A+ 12) of {}", _GRADE_STEPS.index),
    ("sign_values", "the signs as numbers (1 for a plus, -1 for a minus, 0 for none) of {}",
     lambda g: _SIGN_VALUES[_grade_sign(g)]),
)
_GRADE_CHANGES = (  # (name part, phrase, grade -> text)
    ("letters", "the letters of {} ('B+' becomes 'B')", lambda g: g[0]),
    ("raised", "{} one step up ('B+' becomes 'A-', 'F' becomes 'D-', 'A+' stays 'A+')",
     lambda g: _GRADE_STEPS[min(_GRADE_STEPS.index(g) + 1, len(_GRADE_STEPS) - 1)]),
    ("lower", "{} in lower case ('B+' becomes 'b+')", str.lower),
    ("sign_words", "the signs in words ('plus', 'minus' or 'none') of {}",
     lambda g: _SIGN_WORDS[_grade_sign(g)]),
)
# fmt: on


def _grade(rng: random.Random) -> str:
    """One grade, each of the 13 equally likely."""
    return rng.choice(_GRADE_STEPS)


def grade_function_prompts(seed: int = 0) -> list[str]:
    """Every letter-grade filter x change x summary task over ``grades: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the text changes with the word summaries
    (joined by commas)."""
    parts = (_GRADE_FILTERS, _GRADE_NUMBER_CHANGES, _GRADE_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 353, parts, "grades", "List[str]", _grade)


# HumanEval-shaped tasks over compass directions (``compass-functions``: ``directions`` is a list of
# the eight points ``N``, ``NE``, ... ``NW``); a filter over the directions, a change that makes a
# number (the bearing, the opposite bearing, the eighth turns back to north, the letters) or a text
# (the opposite, a quarter turn right, the full name, lower case) of each kept direction and a summary,
# composed as the list tasks are.
_COMPASS_POINTS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")  # clockwise from north, 45 degrees apart
_COMPASS_NAMES = {"N": "north", "E": "east", "S": "south", "W": "west"}


def _compass_turned(direction: str, eighths: int) -> str:
    """The direction ``eighths`` eighth turns clockwise: ('N', 2) 'E', ('NW', 4) 'SE'."""
    return _COMPASS_POINTS[(_COMPASS_POINTS.index(direction) + eighths) % 8]


# fmt: off
_COMPASS_FILTERS = (  # (name part, noun phrase, keep(direction))
    ("northern", "the directions with a north part (N, NE or NW)", lambda d: "N" in d),
    ("southern", "the directions with a south part (S, SE or SW)", lambda d: "S" in d),
    ("eastern", "the directions with an east part (E, NE or SE)", lambda d: "E" in d),
    ("cardinal", "the cardinal directions (N, E, S or W)", lambda d: len(d) == 1),
    ("diagonal", "the diagonal directions (NE, SE, SW or NW)", lambda d: len(d) == 2),
    ("north_to_south", "the directions from N clockwise to S, both included (N, NE, E, SE or S)",
     lambda d: _COMPASS_POINTS.index(d) <= 4),
    ("directions", "all the directions", lambda d: True),
)
_COMPASS_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, direction -> number)
    ("bearings", "the bearings in degrees clockwise from north (N 0, NE 45, E 90, ... NW 315) of {}",
     lambda d: 45 * _COMPASS_POINTS.index(d)),
    ("opposite_bearings", "the bearings in degrees of the opposites (N 180, E 270, W 90) of {}",
     lambda d: 45 * _COMPASS_POINTS.index(_compass_turned(d, 4))),
    ("turns_to_north", "the eighth turns clockwise back to north (N 0, NE 7, W 2) from each of {}",
     lambda d: -_COMPASS_POINTS.index(d) % 8),
    ("letter_counts", "the letters (N 1, NE 2) in each of {}", len),
)
_COMPASS_CHANGES = (  # (name part, phrase, direction -> text)
    ("opposites", "the opposites of {} ('NE' becomes 'SW')", lambda d: _compass_turned(d, 4)),
    ("turned_right", "{} turned a quarter turn clockwise ('N' becomes 'E', 'NW' becomes 'NE')",
     lambda d: _compass_turned(d, 2)),
    ("names", "the full names of {} ('N' becomes 'north', 'NE' becomes 'northeast')",
     lambda d: "".join(_COMPASS_NAMES[letter] for letter in d)),
    ("lower", "{} in lower case ('NE' becomes 'ne')", str.lower),
)
# fmt: on


def _compass_point(rng: random.Random) -> str:
    """One of the eight points, each equally likely."""
    return rng.choice(_COMPASS_POINTS)


def compass_function_prompts(seed: int = 0) -> list[str]:
    """Every compass filter x change x summary task over ``directions: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the text changes with the word summaries
    (joined by commas)."""
    parts = (_COMPASS_FILTERS, _COMPASS_NUMBER_CHANGES, _COMPASS_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 359, parts, "directions", "List[str]", _compass_point)


# HumanEval-shaped tasks over phone numbers (``phone-functions``: ``phones`` is a list of texts of ten
# digits in three dashed groups, the area code, the exchange and the line, like "415-555-0142"); a
# filter over the numbers, a change that makes a number (the area code, the digit sum, the line, the
# zeros) or a text (digits only, dotted, the area code in brackets, masked) of each kept phone number
# and a summary, composed as the list tasks are.
_AREA_CODES = (212, 305, 415, 617, 800, 888, 919)


def _phone_digits(phone: str) -> str:
    """The ten digits without their dashes: '415-555-0142' '4155550142'."""
    return phone.replace("-", "")


# fmt: off
_PHONE_FILTERS = (  # (name part, noun phrase, keep(phone))
    ("toll_free", "the toll-free numbers (area code 800 or 888)", lambda n: n[:3] in ("800", "888")),
    ("exchange_555", "the numbers with the exchange 555 (the middle three digits)",
     lambda n: n[4:7] == "555"),
    ("even_last", "the numbers whose last digit is even", lambda n: int(n[-1]) % 2 == 0),
    ("low_line", "the numbers whose last four digits are below 5000", lambda n: int(n[-4:]) < 5000),
    ("doubled", "the numbers with a digit repeated next to itself (ignoring the dashes)",
     lambda n: any(a == b for a, b in itertools.pairwise(_phone_digits(n)))),
    ("area_above_500", "the numbers whose area code is above 500", lambda n: int(n[:3]) > 500),
    ("phones", "all the phone numbers", lambda n: True),
)
_PHONE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, phone -> number)
    ("area_codes", "the area codes as numbers ('415-555-0142' 415) of {}", lambda n: int(n[:3])),
    ("digit_sums", "the sums of the ten digits ('415-555-0142' 32) of {}",
     lambda n: sum(map(int, _phone_digits(n)))),
    ("lines", "the last four digits as numbers ('415-555-0142' 142) of {}", lambda n: int(n[-4:])),
    ("zero_counts", "the zeros ('415-555-0142' 1) in each of {}", lambda n: n.count("0")),
)
_PHONE_CHANGES = (  # (name part, phrase, phone -> text)
    ("digits_only", "{} with the dashes taken out ('415-555-0142' becomes '4155550142')", _phone_digits),
    ("dotted", "{} with dots for dashes ('415-555-0142' becomes '415.555.0142')",
     lambda n: n.replace("-", ".")),
    ("bracketed", "{} with the area code in brackets ('415-555-0142' becomes '(415) 555-0142')",
     lambda n: f"({n[:3]}) {n[4:]}"),
    ("masked", "{} with all but the last four digits hidden ('415-555-0142' becomes '***-***-0142')",
     lambda n: f"***-***-{n[-4:]}"),
)
# fmt: on


def _phone(rng: random.Random) -> str:
    """One phone number: an area code of ``_AREA_CODES``, the exchange 555 a third of the time (another
    from 200 to 999 otherwise) and any four-digit line."""
    exchange = 555 if rng.random() < 1 / 3 else rng.randint(200, 999)
    return f"{rng.choice(_AREA_CODES)}-{exchange}-{rng.randint(0, 9999):04d}"


def phone_function_prompts(seed: int = 0) -> list[str]:
    """Every phone-number filter x change x summary task over ``phones: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the text changes with the word summaries
    (joined by commas)."""
    parts = (_PHONE_FILTERS, _PHONE_NUMBER_CHANGES, _PHONE_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 373, parts, "phones", "List[str]", _phone)


# HumanEval-shaped tasks over chemical formulas (``formula-functions``: ``formulas`` is a list of
# texts of two or three elements of C, H, N, O, S, Na and Cl, each followed by its count when above
# one, like "C2H6O"); a filter over the formulas, a change that makes a number (the atoms, the
# elements, the hydrogens, the mass) or a text (the elements, twice the atoms, without hydrogen, lower
# case) of each kept formula and a summary, composed as the list tasks are.
_ELEMENTS = ("C", "H", "N", "O", "S", "Na", "Cl")  # the order they are written in
_MASS_NUMBERS = {"C": 12, "H": 1, "N": 14, "O": 16, "S": 32, "Na": 23, "Cl": 35}


def _formula_parts(formula: str) -> list[tuple[str, int]]:
    """Each element of the formula and its count, in order: 'C2H6O' [('C', 2), ('H', 6), ('O', 1)]."""
    return [(element, int(count or 1)) for element, count in re.findall(r"([A-Z][a-z]?)(\d*)", formula)]


def _formula(parts: Sequence[tuple[str, int]]) -> str:
    """The formula of elements and their counts, a count of one left out: [('C', 1), ('O', 2)] 'CO2'."""
    return "".join(f"{element}{count if count > 1 else ''}" for element, count in parts)


def _atom_count(formula: str, element: str) -> int:
    """The atoms of ``element`` in the formula (0 without it): ('C2H6O', 'H') 6."""
    return dict(_formula_parts(formula)).get(element, 0)


# fmt: off
_FORMULA_FILTERS = (  # (name part, noun phrase, keep(formula))
    ("with_carbon", "the formulas with carbon (the element C, not Cl)", lambda f: _atom_count(f, "C") > 0),
    ("with_oxygen", "the formulas with oxygen (O)", lambda f: _atom_count(f, "O") > 0),
    ("two_elements", "the formulas of exactly two elements", lambda f: len(_formula_parts(f)) == 2),
    ("salts", "the formulas with sodium or chlorine (Na or Cl)", lambda f: bool({"Na", "Cl"} & {
        element for element, _ in _formula_parts(f)})),
    ("small", "the formulas of at most 5 atoms", lambda f: sum(n for _, n in _formula_parts(f)) <= 5),
    ("no_hydrogen", "the formulas without hydrogen (H)", lambda f: _atom_count(f, "H") == 0),
    ("formulas", "all the formulas", lambda f: True),
)
_FORMULA_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, formula -> number)
    ("atoms", "the numbers of atoms ('C2H6O' 9) in each of {}",
     lambda f: sum(n for _, n in _formula_parts(f))),
    ("elements", "the numbers of different elements ('C2H6O' 3) in each of {}",
     lambda f: len(_formula_parts(f))),
    ("hydrogens", "the hydrogen atoms ('C2H6O' 6, 0 without H) in each of {}", lambda f: _atom_count(f, "H")),
    ("masses", "the masses (C 12, H 1, N 14, O 16, S 32, Na 23, Cl 35 for each atom: 'C2H6O' 46) of {}",
     lambda f: sum(_MASS_NUMBERS[element] * n for element, n in _formula_parts(f))),
)
_FORMULA_CHANGES = (  # (name part, phrase, formula -> text)
    ("element_lists", "the elements of {} without their counts, joined by dashes ('C2H6O' becomes 'C-H-O')",
     lambda f: "-".join(element for element, _ in _formula_parts(f))),
    ("doubled", "{} with every count doubled ('C2H6O' becomes 'C4H12O2')",
     lambda f: _formula([(element, 2 * n) for element, n in _formula_parts(f)])),
    ("dehydrated", "{} without their hydrogen ('C2H6O' becomes 'C2O', 'H2O' becomes 'O')",
     lambda f: _formula([(element, n) for element, n in _formula_parts(f) if element != "H"])),
    ("lower", "{} in lower case ('NaCl' becomes 'nacl')", str.lower),
)
# fmt: on


def _chemical_formula(rng: random.Random) -> str:
    """Two or three different elements of ``_ELEMENTS`` in their written order, each 1 to 6 atoms."""
    elements = sorted(rng.sample(_ELEMENTS, rng.randint(2, 3)), key=_ELEMENTS.index)
    return _formula([(element, rng.randint(1, 6)) for element in elements])


def formula_function_prompts(seed: int = 0) -> list[str]:
    """Every chemical-formula filter x change x summary task over ``formulas: List[str]``, with 2-3
    examples each: the number changes with the number summaries, the text changes with the word
    summaries (joined by commas)."""
    parts = (_FORMULA_FILTERS, _FORMULA_NUMBER_CHANGES, _FORMULA_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 379, parts, "formulas", "List[str]", _chemical_formula)


# HumanEval-shaped tasks over Roman numerals (``roman-functions``: ``numerals`` is a list of texts
# of the letters I, V, X, L and C written the standard way, a smaller letter before a larger one
# taking itself away, for the numbers 1 to 399, like "XIV"); a filter over the numerals, a change that
# makes a number (the value, the letters, the hundreds, the different letters) or a text (lower case,
# the next numeral, the value doubled, the value in digits) of each kept numeral and a summary,
# composed as the list tasks are.
_ROMAN_LETTERS = (
    ("C", 100),
    ("XC", 90),
    ("L", 50),
    ("XL", 40),
    ("X", 10),
    ("IX", 9),
    ("V", 5),
    ("IV", 4),
    ("I", 1),
)
_ROMAN_LETTER_WORTH = {letter: worth for letter, worth in _ROMAN_LETTERS if len(letter) == 1}


def _roman(value: int) -> str:
    """The standard Roman numeral of 1 <= ``value`` < 400: 14 'XIV', 399 'CCCXCIX'."""
    if not 1 <= value < 400:
        raise ValueError(f"value is {value}; expected 1 to 399 (the numerals use I, V, X, L and C)")
    letters = []
    for numeral, worth in _ROMAN_LETTERS:
        count, value = divmod(value, worth)
        letters.append(numeral * count)
    return "".join(letters)


def _roman_value(numeral: str) -> int:
    """The number a standard Roman numeral of I, V, X, L and C writes: 'XIV' 14."""
    values = [_ROMAN_LETTER_WORTH[letter] for letter in numeral]
    return sum(-v if v < after else v for v, after in zip(values, [*values[1:], 0]))


# fmt: off
_ROMAN_FILTERS = (  # (name part, noun phrase, keep(numeral))
    ("below_ten", "the numerals of numbers below 10", lambda r: _roman_value(r) < 10),
    ("even", "the numerals of even numbers", lambda r: _roman_value(r) % 2 == 0),
    ("subtractive", "the numerals with a smaller letter before a larger one (like IV or XC)",
     lambda r: any(_ROMAN_LETTER_WORTH[a] < _ROMAN_LETTER_WORTH[b] for a, b in itertools.pairwise(r))),
    ("short", "the numerals of at most 3 letters", lambda r: len(r) <= 3),
    ("hundreds", "the numerals of 100 or more (with a C that counts 100)", lambda r: _roman_value(r) >= 100),
    ("fives", "the numerals of multiples of 5", lambda r: _roman_value(r) % 5 == 0),
    ("numerals", "all the numerals", lambda r: True),
)
_ROMAN_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, numeral -> number)
    ("values", "the numbers ('XIV' 14) that {} stand for", _roman_value),
    ("letter_counts", "the numbers of letters ('XIV' 3) in each of {}", len),
    ("hundreds_digits", "the hundreds digits of the numbers ('CXL' 1, 'XIV' 0) of {}",
     lambda r: _roman_value(r) // 100),
    ("distinct_letters", "the numbers of different letters ('XIV' 3, 'XXX' 1) in each of {}",
     lambda r: len(set(r))),
)
_ROMAN_CHANGES = (  # (name part, phrase, numeral -> text)
    ("lower", "{} in lower case ('XIV' becomes 'xiv')", str.lower),
    ("next", "{} each replaced by the numeral of the next number ('XIV' becomes 'XV', 'XIX' becomes 'XX')",
     lambda r: _roman(_roman_value(r) + 1)),
    ("doubled", "{} each replaced by the numeral of twice its number ('XIV' becomes 'XXVIII')",
     lambda r: _roman(2 * _roman_value(r))),
    ("in_digits", "{} written in digits ('XIV' becomes '14')", lambda r: str(_roman_value(r))),
)
# fmt: on


def _roman_numeral(rng: random.Random) -> str:
    """The numeral of a number below 10 a fifth of the time, of one from 10 to 199 otherwise (so that
    twice it and the next still have numerals)."""
    return _roman(rng.randint(1, 9) if rng.random() < 0.2 else rng.randint(10, 199))


def roman_function_prompts(seed: int = 0) -> list[str]:
    """Every Roman-numeral filter x change x summary task over ``numerals: List[str]``, with 2-3
    examples each: the number changes with the number summaries, the text changes with the word
    summaries (joined by commas)."""
    parts = (_ROMAN_FILTERS, _ROMAN_NUMBER_CHANGES, _ROMAN_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 389, parts, "numerals", "List[str]", _roman_numeral)


# HumanEval-shaped tasks over ISBN-13 book numbers (``isbn-functions``: ``isbns`` is a list of texts
# of thirteen digits in five dashed groups, the prefix 978 or 979, the registration group, the
# publisher, the title and the check digit, like "978-0-306-40615-7"); a filter over the numbers, a
# change that makes a number (the check digit, the digit sum, the group, the weighted sum) or a text
# (digits only, spaced, the title block, the check digit put right) of each kept number and a summary,
# composed as the list tasks are.
def _isbn_digits(isbn: str) -> list[int]:
    """The thirteen digits without their dashes: '978-0-306-40615-7' [9, 7, 8, 0, 3, ...]."""
    return [int(d) for d in isbn if d.isdigit()]


def _isbn_weighted_sum(isbn: str) -> int:
    """The first twelve digits weighted 1, 3, 1, 3, ...: what the check digit tops up to a multiple of 10."""
    return sum(d * (3 if i % 2 else 1) for i, d in enumerate(_isbn_digits(isbn)[:12]))


def _isbn_check_digit(isbn: str) -> int:
    """The check digit the first twelve digits call for: (10 - weighted sum % 10) % 10."""
    return (10 - _isbn_weighted_sum(isbn) % 10) % 10


# fmt: off
_ISBN_FILTERS = (  # (name part, noun phrase, keep(isbn))
    ("valid", "the ISBNs whose check digit is right (the thirteen digits weighted 1, 3, 1, 3, ... sum to a "
     "multiple of 10)", lambda n: _isbn_digits(n)[-1] == _isbn_check_digit(n)),
    ("prefix_979", "the ISBNs that start with 979", lambda n: n.startswith("979")),
    ("english", "the ISBNs of registration group 0 or 1 (the digit after the prefix)",
     lambda n: n.split("-")[1] in ("0", "1")),
    ("even_check", "the ISBNs whose last digit is even", lambda n: int(n[-1]) % 2 == 0),
    ("big_sum", "the ISBNs whose thirteen digits sum to more than 60", lambda n: sum(_isbn_digits(n)) > 60),
    ("low_publisher", "the ISBNs whose publisher block (the third group) starts with 0, 1 or 2",
     lambda n: n.split("-")[2][0] in "012"),
    ("isbns", "all the ISBNs", lambda n: True),
)
_ISBN_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, isbn -> number)
    ("check_digits", "the last digits ('978-0-306-40615-7' 7) of {}", lambda n: int(n[-1])),
    ("digit_sums", "the sums of the thirteen digits ('978-0-306-40615-7' 56) of {}",
     lambda n: sum(_isbn_digits(n))),
    ("groups", "the registration groups as numbers ('978-0-306-40615-7' 0) of {}",
     lambda n: int(n.split("-")[1])),
    ("weighted_sums", "the sums of the first twelve digits weighted 1, 3, 1, 3, ... "
     "('978-0-306-40615-7' 93) of {}", _isbn_weighted_sum),
)
_ISBN_CHANGES = (  # (name part, phrase, isbn -> text)
    ("digits_only", "{} with the dashes taken out ('978-0-306-40615-7' becomes '9780306406157')",
     lambda n: n.replace("-", "")),
    ("spaced", "{} with spaces for dashes ('978-0-306-40615-7' becomes '978 0 306 40615 7')",
     lambda n: n.replace("-", " ")),
    ("titles", "the title blocks (the fourth group: '978-0-306-40615-7' gives '40615') of {}",
     lambda n: n.split("-")[3]),
    ("corrected", "{} with the check digit put right ('978-0-306-40615-1' becomes '978-0-306-40615-7')",
     lambda n: f"{n[:-1]}{_isbn_check_digit(n)}"),
)
# fmt: on


def _isbn(rng: random.Random) -> str:
    """One ISBN-13: the prefix 978 (979 a quarter of the time), a group digit, a three-digit publisher
    and a five-digit title, and a check digit that is right two times in three (any other digit else)."""
    prefix = "979" if rng.random() < 0.25 else "978"
    body = f"{prefix}-{rng.randint(0, 9)}-{rng.randint(0, 999):03d}-{rng.randint(0, 99999):05d}"
    right = _isbn_check_digit(body + "-0")
    check = right if rng.random() < 2 / 3 else rng.choice([d for d in range(10) if d != right])
    return f"{body}-{check}"


def isbn_function_prompts(seed: int = 0) -> list[str]:
    """Every ISBN filter x change x summary task over ``isbns: List[str]``, with 2-3 examples each: the
    number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_ISBN_FILTERS, _ISBN_NUMBER_CHANGES, _ISBN_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 401, parts, "isbns", "List[str]", _isbn)


# HumanEval-shaped tasks over DNA strands (``dna-functions``: ``strands`` is a list of texts of the
# letters A, C, G and T, 4 to 12 long, a third of them starting with the codon ATG); a filter over
# the strands, a change that makes a number (the length, the G and C letters, the A letters, the whole
# codons) or a text (the complement, the reverse complement, the RNA, lower case) of each kept strand
# and a summary, composed as the list tasks are.
_DNA_PAIRS = str.maketrans("ACGT", "TGCA")


def _dna_gc_count(strand: str) -> int:
    """How many of the strand's letters are G or C: 'GATC' 2."""
    return strand.count("G") + strand.count("C")


# fmt: off
_DNA_FILTERS = (  # (name part, noun phrase, keep(strand))
    ("gc_rich", "the strands with more G and C letters than A and T letters",
     lambda s: 2 * _dna_gc_count(s) > len(s)),
    ("start_codon", "the strands that start with ATG", lambda s: s.startswith("ATG")),
    ("even_length", "the strands of an even number of letters", lambda s: len(s) % 2 == 0),
    ("ends_gc", "the strands that end with G or C", lambda s: s[-1] in "GC"),
    ("doubled_letter", "the strands with the same letter twice in a row",
     lambda s: any(a == b for a, b in itertools.pairwise(s))),
    ("long", "the strands of more than 8 letters", lambda s: len(s) > 8),
    ("strands", "all the strands", lambda s: True),
)
_DNA_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, strand -> number)
    ("lengths", "the lengths ('ATGCA' 5) of {}", len),
    ("gc_counts", "the numbers of G and C letters ('GATC' 2) in each of {}", _dna_gc_count),
    ("a_counts", "the numbers of A letters ('AATG' 2) in each of {}", lambda s: s.count("A")),
    ("codon_counts", "the numbers of whole codons of three letters ('ATGCA' 1) in each of {}",
     lambda s: len(s) // 3),
)
_DNA_CHANGES = (  # (name part, phrase, strand -> text)
    ("complements", "the complements of {} (A and T swapped, C and G swapped: 'ATGC' becomes 'TACG')",
     lambda s: s.translate(_DNA_PAIRS)),
    ("reverse_complements", "the reverse complements of {} (the complement read backwards: 'ATGC' "
     "becomes 'GCAT')", lambda s: s.translate(_DNA_PAIRS)[::-1]),
    ("rna", "{} written as RNA (every T becomes U: 'ATGC' becomes 'AUGC')", lambda s: s.replace("T", "U")),
    ("lower", "{} in lower case ('ATGC' becomes 'atgc')", str.lower),
)
# fmt: on


def _dna_strand(rng: random.Random) -> str:
    """A strand of 4 to 12 letters of ACGT; a third of them start with the codon ATG (so that the filter
    on it keeps some in most examples)."""
    length = rng.randint(4, 12)
    start = "ATG" if rng.random() < 1 / 3 else ""
    return start + "".join(rng.choice("ACGT") for _ in range(length - len(start)))


def dna_function_prompts(seed: int = 0) -> list[str]:
    """Every DNA filter x change x summary task over ``strands: List[str]``, with 2-3 examples each: the
    number changes with the number summaries, the text changes with the word summaries (joined by
    commas)."""
    parts = (_DNA_FILTERS, _DNA_NUMBER_CHANGES, _DNA_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 419, parts, "strands", "List[str]", _dna_strand)


# HumanEval-shaped tasks over passwords (``password-functions``: ``passwords`` is a list of texts
# made the way people make them, a word, capitalised two times in five, with 0-4 digits and a
# symbol of !@#$%&* two times in five, after the word or, a quarter of the time, before it); a filter
# over the passwords, a change that makes a number (the length, the digits, the upper-case letters,
# the kinds of character) or a text (masked, backwards, the letters only, the case swapped) of each
# kept password and a summary, composed as the list tasks are.
_PASSWORD_SYMBOLS = "!@#$%&*"


def _letters_only(text: str) -> str:
    """The text's letters in order, everything else taken out: 'River42!' 'River' (the password,
    plate and tag text changes)."""
    return "".join(filter(str.isalpha, text))


def _letter_count(text: str) -> int:
    """How many letters the text has: 'AB-123C' 3 (the plate and tag number changes)."""
    return sum(map(str.isalpha, text))


def _upper_count(text: str) -> int:
    """How many upper-case letters the text has: 'River42' 1 (the password and tag number changes)."""
    return sum(map(str.isupper, text))


def _has_no_upper(text: str) -> bool:
    """Whether the text has no upper-case letter (the password and tag filters)."""
    return not any(c.isupper() for c in text)


def _password_kinds(password: str) -> int:
    """How many of the four kinds of character (lower-case, upper-case, digit, symbol) the password
    uses: 'ab1!' 3."""
    tests = (str.islower, str.isupper, str.isdigit, lambda c: c in _PASSWORD_SYMBOLS)
    return sum(any(test(c) for c in password) for test in tests)


# fmt: off
_PASSWORD_FILTERS = (  # (name part, noun phrase, keep(password))
    ("strong", "the passwords of at least 8 characters with a digit and an upper-case letter",
     lambda s: len(s) >= 8 and any(c.isdigit() for c in s) and any(c.isupper() for c in s)),
    ("has_digit", "the passwords with a digit in them", lambda s: any(c.isdigit() for c in s)),
    ("has_symbol", f"the passwords with one of the symbols {_PASSWORD_SYMBOLS} in them",
     lambda s: any(c in _PASSWORD_SYMBOLS for c in s)),
    ("short", "the passwords of fewer than 8 characters", lambda s: len(s) < 8),
    ("no_upper", "the passwords without an upper-case letter", _has_no_upper),
    ("letter_first", "the passwords that start with a letter", lambda s: s[0].isalpha()),
    ("passwords", "all the passwords", lambda s: True),
)
_PASSWORD_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, password -> number)
    ("lengths", "the lengths ('river42!' 8) of {}", len),
    ("digit_counts", "the numbers of digits ('river42!' 2) in each of {}",
     lambda s: sum(map(str.isdigit, s))),
    ("upper_counts", "the numbers of upper-case letters ('River42' 1) in each of {}", _upper_count),
    ("kinds", "the numbers of kinds of character used (lower-case letters, upper-case letters, digits "
     "and symbols: 'river42!' 3) in each of {}", _password_kinds),
)
_PASSWORD_CHANGES = (  # (name part, phrase, password -> text)
    ("masked", "{} masked (every character but the last two becomes '*': 'river42!' becomes '******2!')",
     lambda s: "*" * (len(s) - 2) + s[-2:]),
    ("backwards", "{} read backwards ('river42!' becomes '!24revir')", lambda s: s[::-1]),
    ("letters_only", "{} with everything but the letters taken out ('River42!' becomes 'River')",
     _letters_only),
    ("swapped_case", "{} with the case of every letter swapped ('River42!' becomes 'rIVER42!')",
     str.swapcase),
)
# fmt: on


def _password(rng: random.Random) -> str:
    """A password made the way people make them: a word (capitalised two times in five), 0-4 digits
    and a symbol two times in five, after the word or, a quarter of the time, before it."""
    word = rng.choice(_LIST_WORDS)
    word = word.capitalize() if rng.random() < 0.4 else word
    digits = "".join(rng.choice("0123456789") for _ in range(rng.choice((0, 1, 2, 2, 3, 4))))
    symbol = rng.choice(_PASSWORD_SYMBOLS) if rng.random() < 0.4 else ""
    return symbol + digits + word if rng.random() < 0.25 else word + digits + symbol


def password_function_prompts(seed: int = 0) -> list[str]:
    """Every password filter x change x summary task over ``passwords: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the text changes with the word summaries
    (joined by commas)."""
    parts = (_PASSWORD_FILTERS, _PASSWORD_NUMBER_CHANGES, _PASSWORD_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 431, parts, "passwords", "List[str]", _password)


# HumanEval-shaped tasks over car number plates (``plate-functions``: two or three capital letters, a
# hyphen, a space or nothing, a number of 2-4 digits that does not start with 0 and, a quarter of the
# time, one more letter: "AB-123", "KLM 4821", "XY57C"); a filter over the plates, a change that makes
# a number (the number on it, its digit sum, the letters, the length) or a text (compact, lower case,
# the letters only, the digits masked) of each kept plate and a summary, composed as the list tasks are.
_PLATE_VOWELS = "AEIOU"


def _plate_number(plate: str) -> int:
    """The number on the plate, its digits read together: 'AB-123C' 123."""
    return int("".join(filter(str.isdigit, plate)))


# fmt: off
_PLATE_FILTERS = (  # (name part, noun phrase, keep(plate))
    ("hyphenated", "the plates with a hyphen in them", lambda s: "-" in s),
    ("three_letters", "the plates that start with three letters", lambda s: s[:3].isalpha()),
    ("even_number", "the plates whose number is even ('AB-124' has the number 124)",
     lambda s: _plate_number(s) % 2 == 0),
    ("vowel_free", "the plates without a vowel (A, E, I, O or U)",
     lambda s: not any(c in _PLATE_VOWELS for c in s)),
    ("long", "the plates of more than 6 characters", lambda s: len(s) > 6),
    ("ends_letter", "the plates that end with a letter", lambda s: s[-1].isalpha()),
    ("plates", "all the plates", lambda s: True),
)
_PLATE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, plate -> number)
    ("numbers", "the numbers ('AB-123C' 123) on {}", _plate_number),
    ("digit_sums", "the sums of the digits ('AB-123' 6) of {}",
     lambda s: sum(int(c) for c in s if c.isdigit())),
    ("letter_counts", "the numbers of letters ('AB-123C' 3) in each of {}", _letter_count),
    ("lengths", "the lengths ('AB 123' 6) of {}", len),
)
_PLATE_CHANGES = (  # (name part, phrase, plate -> text)
    ("compact", "{} with the spaces and hyphens taken out ('AB-123' becomes 'AB123')",
     lambda s: s.replace("-", "").replace(" ", "")),
    ("lower", "{} in lower case ('AB-123' becomes 'ab-123')", str.lower),
    ("letters", "the letters of {} ('AB-123C' becomes 'ABC')", _letters_only),
    ("masked", "{} with every digit replaced by '#' ('AB-123' becomes 'AB-###')",
     lambda s: "".join("#" if c.isdigit() else c for c in s)),
)
# fmt: on


def _plate(rng: random.Random) -> str:
    """A number plate: 2-3 capital letters, a hyphen, a space or nothing, 2-4 digits not starting with
    0 and, a quarter of the time, one more letter."""
    letters = "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(2, 3)))
    digits = str(rng.randint(1, 9)) + "".join(rng.choice(string.digits) for _ in range(rng.randint(1, 3)))
    suffix = rng.choice(string.ascii_uppercase) if rng.random() < 0.25 else ""
    return letters + rng.choice(("-", " ", "")) + digits + suffix


def plate_function_prompts(seed: int = 0) -> list[str]:
    """Every number-plate filter x change x summary task over ``plates: List[str]``, with 2-3 examples
    each: the number changes with the number summaries, the text changes with the word summaries
    (joined by commas)."""
    parts = (_PLATE_FILTERS, _PLATE_NUMBER_CHANGES, _PLATE_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 439, parts, "plates", "List[str]", _plate)


# HumanEval-shaped tasks over hashtags (``tag-functions``: a "#" and one to three words, in CamelCase
# three times in five and in lower case otherwise, with a year a quarter of the time: "#SummerFun2024",
# "#bookclub", "#Owls"); a filter over the tags, a change that makes a number (the length, the capitals,
# the letters, the year) or a text (without the "#", lower case, split into words at the capitals, the
# letters only) of each kept tag and a summary, composed as the list tasks are.
_TAG_VOWELS = "aeiouAEIOU"


def _tag_year(tag: str) -> int:
    """The number at the end of the tag, 0 without one: '#Fun2024' 2024."""
    digits = re.search(r"[0-9]*$", tag).group()
    return int(digits) if digits else 0


# fmt: off
_TAG_FILTERS = (  # (name part, noun phrase, keep(tag))
    ("camel", "the tags whose first letter is a capital ('#SummerFun')", lambda s: s[1].isupper()),
    ("has_year", "the tags that end with a number", lambda s: s[-1].isdigit()),
    ("short", "the tags of at most 10 characters, the '#' included", lambda s: len(s) <= 10),
    ("all_lower", "the tags without an upper-case letter", _has_no_upper),
    ("vowel_first", "the tags whose first letter is a vowel", lambda s: s[1] in _TAG_VOWELS),
    ("long", "the tags of more than 14 characters", lambda s: len(s) > 14),
    ("tags", "all the tags", lambda s: True),
)
_TAG_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, tag -> number)
    ("lengths", "the lengths ('#SummerFun' 10) of {}", len),
    ("capital_counts", "the numbers of capital letters ('#SummerFun' 2) in each of {}", _upper_count),
    ("letter_counts", "the numbers of letters ('#Fun2024' 3) in each of {}", _letter_count),
    ("years", "the numbers at the end ('#Fun2024' 2024, 0 for a tag without one) of {}", _tag_year),
)
_TAG_CHANGES = (  # (name part, phrase, tag -> text)
    ("bare", "{} without the '#' ('#SummerFun' becomes 'SummerFun')", lambda s: s[1:]),
    ("lower", "{} in lower case ('#SummerFun' becomes '#summerfun')", str.lower),
    ("spaced", "{} without the '#' and with a space before every capital but the first ('#SummerFun2024' "
     "becomes 'Summer Fun2024')", lambda s: s[1] + "".join(" " + c if c.isupper() else c for c in s[2:])),
    ("letters", "the letters of {} ('#Fun2024' becomes 'Fun')", _letters_only),
)
# fmt: on


def _tag(rng: random.Random) -> str:
    """A hashtag: '#' and 1-3 words of ``_LIST_WORDS``, each capitalised three times in five (all
    lower case otherwise), and a year from 2019 to 2025 a quarter of the time."""
    words = rng.sample(_LIST_WORDS, rng.randint(1, 3))
    text = "".join(w.capitalize() for w in words) if rng.random() < 0.6 else "".join(words)
    return "#" + text + (str(rng.randint(2019, 2025)) if rng.random() < 0.25 else "")


def tag_function_prompts(seed: int = 0) -> list[str]:
    """Every hashtag filter x change x summary task over ``tags: List[str]``, with 2-3 examples each:
    the number changes with the number summaries, the text changes with the word summaries (joined
    by commas)."""
    parts = (_TAG_FILTERS, _TAG_NUMBER_CHANGES, _TAG_CHANGES, _COMMA_WORD_SUMMARIES)
    return _distinct_item_prompts(seed + 449, parts, "tags", "List[str]", _tag)


# HumanEval-shaped tasks over two lists read side by side (``pair-functions``): a filter over the pairs
# (a[i], b[i]), a change that makes one number of each pair and a summary, composed as the list tasks are.
# fmt: off
_PAIR_FILTERS = (  # (name part, noun phrase, keep((x, y)))
    ("first_larger", "the pairs (a[i], b[i]) with a[i] > b[i]", lambda p: p[0] > p[1]),
    ("second_larger", "the pairs (a[i], b[i]) with a[i] < b[i]", lambda p: p[0] < p[1]),
    ("equal", "the pairs (a[i], b[i]) with a[i] == b[i]", lambda p: p[0] == p[1]),
    ("unequal", "the pairs (a[i], b[i]) with a[i] != b[i]", lambda p: p[0] != p[1]),
    ("same_parity", "the pairs (a[i], b[i]) whose numbers are both even or both odd",
     lambda p: (p[0] - p[1]) % 2 == 0),
    ("both_positive", "the pairs (a[i], b[i]) whose numbers are both positive",
     lambda p: p[0] > 0 and p[1] > 0),
    ("pairs", "all the pairs (a[i], b[i])", lambda p: True),
)
_PAIR_CHANGES = (  # (name part, phrase around the filtered noun phrase, change of a pair into a number)
    ("sums", "the sums of {}", lambda p: p[0] + p[1]),
    ("differences", "the differences a[i] - b[i] of {}", lambda p: p[0] - p[1]),
    ("gaps", "the absolute differences of {}", lambda p: abs(p[0] - p[1])),
    ("products", "the products of {}", lambda p: p[0] * p[1]),
    ("larger", "the larger numbers of {}", max),
    ("smaller", "the smaller numbers of {}", min),
)
# fmt: on


def _paired_lists(rng: random.Random) -> tuple[list[int], list[int]]:
    """Two lists of 4-7 numbers from -5 to 12, of one length; about a quarter of b repeats a at the
    same position, so that the equal pairs' tasks keep some."""
    a = [rng.randint(-5, 12) for _ in range(rng.randint(4, 7))]
    return a, [x if rng.random() < 0.25 else rng.randint(-5, 12) for x in a]


def pair_function_prompts(seed: int = 0) -> list[str]:
    """Every pair filter x change x summary task over ``(a, b)``, with 2-3 examples each."""
    parts = (_PAIR_FILTERS, _PAIR_CHANGES, _NUMBER_SUMMARIES)
    return _composed_prompts(
        random.Random(seed + 71),
        parts,
        "a",
        "List[int]",
        _paired_lists,
        ", b: List[int]",
        items_of=zip,
    )


# HumanEval-shaped tasks over a dictionary (``mapping-functions``): ``scores`` maps each student's
# name to a score; a filter over its entries, a change that makes a number (or a name) of each entry
# and a summary, composed as the list tasks are.
# fmt: off
_ENTRY_FILTERS = (  # (name part, noun phrase, keep((name, score)))
    ("passing", "the students with a score of at least 50", lambda e: e[1] >= 50),
    ("failing", "the students with a score below 50", lambda e: e[1] < 50),
    ("even_score", "the students with an even score", lambda e: e[1] % 2 == 0),
    ("odd_score", "the students with an odd score", lambda e: e[1] % 2 == 1),
    ("short_name", "the students whose name has at most four letters", lambda e: len(e[0]) <= 4),
    ("vowel_name", "the students whose name starts with a vowel", lambda e: e[0][0] in "AEIOU"),
    ("students", "all the students", lambda e: True),
)
_ENTRY_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, entry -> number)
    ("scores", "the scores of {}", lambda e: e[1]),
    ("doubled_scores", "twice the scores of {}", lambda e: 2 * e[1]),
    ("score_tens", "the scores of {}, each divided by ten and rounded down", lambda e: e[1] // 10),
    ("missing_points", "how many points the scores of {} are below 100", lambda e: 100 - e[1]),
    ("name_lengths", "the lengths of the names of {}", lambda e: len(e[0])),
    ("bonus_scores", "the scores of {}, each increased by the length of the name",
     lambda e: e[1] + len(e[0])),
)
_ENTRY_NAME_CHANGES = (  # (name part, phrase around the filtered noun phrase, entry -> name)
    ("", "the names of {}", lambda e: e[0]),
    ("upper", "the names of {}, in upper case", lambda e: e[0].upper()),
    ("initial", "the first letters of the names of {}", lambda e: e[0][0]),
)
_STUDENT_NAMES = (
    "Ada", "Alice", "Amelia", "Bob", "Charlie", "Daniel", "Edward", "Emil", "Emma", "Ethan", "Eve",
    "Grace", "Henry", "Irene", "Isabel", "Ivan", "Julia", "Kim", "Leo", "Lucas", "Max", "Mia", "Noah",
    "Oliver", "Omar", "Otto", "Sam", "Sophia", "Tom", "Uma", "Zoe",
)
# fmt: on


def _student_scores(rng: random.Random) -> tuple[dict[str, int]]:
    """3-6 students, each name to a score from 0 to 100: the argument of the mapping tasks' examples."""
    names = rng.sample(_STUDENT_NAMES, rng.randint(3, 6))
    return ({name: rng.randint(0, 100) for name in names},)


def mapping_function_prompts(seed: int = 0) -> list[str]:
    """Every entry filter x change x summary task over ``scores: Dict[str, int]``, with 2-3 examples
    each: the number changes with the number summaries, the name changes with the word summaries."""
    parts = (_ENTRY_FILTERS, _ENTRY_NUMBER_CHANGES, _ENTRY_NAME_CHANGES, _WORD_SUMMARIES)
    return _number_and_item_prompts(
        random.Random(seed + 73), *parts, "scores", "Dict[str, int]", _student_scores, dict.items
    )


# HumanEval-shaped tasks over the words of a sentence (``sentence-functions``): ``sentence`` is words
# separated by single spaces; a word filter, a change that makes a number (its length, its vowels)
# or a word of each kept word and a summary, composed as the list tasks are.
# fmt: off
_SENTENCE_WORD_FILTERS = (  # (name part, noun phrase, keep(word))
    ("capitalized", "the words of the sentence that start with a capital letter", lambda w: w[0].isupper()),
    ("plural", "the words of the sentence that end with the letter s", lambda w: w.endswith("s")),
    ("long_words", "the words of the sentence longer than four letters", lambda w: len(w) > 4),
    ("short_words", "the words of the sentence of at most three letters", lambda w: len(w) <= 3),
    ("doubled", "the words of the sentence with the same letter twice in a row",
     lambda w: any(a == b for a, b in zip(w, w[1:]))),
    ("e_words", "the words of the sentence that contain the letter e", lambda w: "e" in w.lower()),
    ("words", "all the words of the sentence", lambda w: True),
)
_SENTENCE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, word -> number)
    ("lengths", "the lengths of {}", len),
    ("vowel_counts", "the numbers of vowels in {}", lambda w: sum(c in "aeiouAEIOU" for c in w)),
    ("letter_counts", "the numbers of different letters in {}", lambda w: len(set(w.lower()))),
)
_SENTENCE_WORD_CHANGES = (  # (name part, phrase around the filtered noun phrase, word -> word)
    ("", "{}", lambda w: w),
    ("lower", "{}, in lower case", str.lower),
    ("backwards", "{}, each spelled backwards", lambda w: w[::-1]),
    ("last_letters", "the last letters of {}", lambda w: w[-1]),
)
_SENTENCE_WORDS = (
    "The", "A", "Anna", "Ben", "Paris", "Monday", "cat", "dog", "sun", "egg", "tree", "moon", "book",
    "apples", "letters", "boxes", "bees", "hills", "little", "green", "yellow", "happy", "sweet",
    "running", "bright", "ocean", "coffee", "garden", "reads", "sings", "jumps", "sleeps", "under",
    "near", "over", "and", "with", "two", "three", "tall", "old", "red",
)
# fmt: on


def _sentence(rng: random.Random) -> tuple[str]:
    """5-8 words from ``_SENTENCE_WORDS`` joined by single spaces: the tasks' example argument."""
    return (" ".join(rng.sample(_SENTENCE_WORDS, rng.randint(5, 8))),)


def sentence_function_prompts(seed: int = 0) -> list[str]:
    """Every word filter x change x summary task over ``sentence: str``, with 2-3 examples each: the
    number changes with the number summaries, the word changes with the word summaries."""
    parts = (_SENTENCE_WORD_FILTERS, _SENTENCE_NUMBER_CHANGES, _SENTENCE_WORD_CHANGES, _WORD_SUMMARIES)
    return _number_and_item_prompts(random.Random(seed + 79), *parts, "sentence", "str", _sentence, str.split)


# HumanEval-shaped tasks over the rows of a grid (``grid-functions``): ``grid`` is a list of rows of
# numbers (rows may differ in length, none empty); a row filter, a change that makes a number (its sum,
# its largest, ...) or a row (reversed, sorted, ...) of each kept row and a summary, composed as the
# list tasks are.
# fmt: off
_ROW_FILTERS = (  # (name part, noun phrase, keep(row))
    ("positive_rows", "the rows of the grid whose numbers are all positive", lambda r: min(r) > 0),
    ("rows_with_negative", "the rows of the grid that contain a negative number", lambda r: min(r) < 0),
    ("rows_with_zero", "the rows of the grid that contain a zero", lambda r: 0 in r),
    ("increasing_rows", "the rows of the grid whose numbers are in strictly increasing order",
     lambda r: all(a < b for a, b in zip(r, r[1:]))),
    ("even_sum_rows", "the rows of the grid whose sum is even", lambda r: sum(r) % 2 == 0),
    ("long_rows", "the rows of the grid with more than three numbers", lambda r: len(r) > 3),
    ("rows", "all the rows of the grid", lambda r: True),
)
_ROW_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, row -> number)
    ("row_sums", "the sums of {}", sum),
    ("row_maxima", "the largest numbers of {}", max),
    ("row_minima", "the smallest numbers of {}", min),
    ("row_lengths", "the lengths of {}", len),
    ("first_numbers", "the first numbers of {}", lambda r: r[0]),
    ("row_spans", "the differences between the largest and the smallest number of {}",
     lambda r: max(r) - min(r)),
)
_ROW_CHANGES = (  # (name part, phrase around the filtered noun phrase, row -> row)
    ("", "{}", list),
    ("reversed", "{}, each reversed", lambda r: r[::-1]),
    ("sorted", "{}, each sorted in increasing order", sorted),
    ("squared", "{}, with every number squared", lambda r: [x * x for x in r]),
)
_ROW_SUMMARIES = (  # (name part, sentence, return annotation, summary of the changed rows)
    ("list", "Return a list of {}, in their original order.", "List[List[int]]", list),
    ("flattened", "Return the numbers of {}, one row after another, in one flat list.", "List[int]",
     lambda rows: [x for row in rows for x in row]),
    ("longest", "Return the longest of {}; the first one if several are equally long, or None if "
     "there are none.", "Optional[List[int]]", lambda rows: max(rows, key=len, default=None)),
    ("count", "Return how many of {} there are.", "int", len),
)
# fmt: on


def _grid_row(rng: random.Random) -> list[int]:
    """2-5 numbers from -5 to 15; a quarter of the rows get a zero and about a third are sorted, so
    that the rows-with-zero and increasing-rows tasks keep some."""
    row = rng.sample(range(-5, 16), rng.randint(2, 5))
    if rng.random() < 0.25:
        row[rng.randrange(len(row))] = 0
    return sorted(row) if rng.random() < 0.3 else row


def _grid(rng: random.Random) -> tuple[list[list[int]]]:
    """3-5 rows from :func:`_grid_row`: the grid tasks' example argument."""
    return ([_grid_row(rng) for _ in range(rng.randint(3, 5))],)


def grid_function_prompts(seed: int = 0) -> list[str]:
    """Every row filter x change x summary task over ``grid: List[List[int]]``, with 2-3 examples
    each: the number changes with the number summaries, the row changes with the row summaries."""
    parts = (_ROW_FILTERS, _ROW_NUMBER_CHANGES, _ROW_CHANGES, _ROW_SUMMARIES)
    return _number_and_item_prompts(random.Random(seed + 83), *parts, "grid", "List[List[int]]", _grid, iter)


# HumanEval-shaped tasks over the lines of a text (``line-functions``): ``text`` is lines separated by
# newlines (settings, log lines, comments, indented or blank-looking lines); a line filter, a change
# that makes a number (its length, its words, its digits' sum) or a line (stripped, in upper case, its
# first word) of each kept line and a summary, composed as the list tasks are.
# fmt: off
_LINE_FILTERS = (  # (name part, noun phrase, keep(line))
    ("comment_lines", "the lines of the text that start with '#'", lambda line: line.startswith("#")),
    ("nonblank_lines", "the lines of the text that are not blank (only spaces)",
     lambda line: line.strip() != ""),
    ("lines_with_digits", "the lines of the text that contain a digit",
     lambda line: any(c.isdigit() for c in line)),
    ("indented_lines", "the lines of the text that start with a space", lambda line: line.startswith(" ")),
    ("capital_lines", "the lines of the text that start with a capital letter",
     lambda line: line[:1].isupper()),
    ("long_lines", "the lines of the text longer than twelve characters", lambda line: len(line) > 12),
    ("lines", "all the lines of the text", lambda line: True),
)
_LINE_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, line -> number)
    ("line_lengths", "the lengths of {}", len),
    ("word_counts", "the numbers of words in {}", lambda line: len(line.split())),
    ("digit_sums", "the sums of the digits in {}", lambda line: sum(int(c) for c in line if c.isdigit())),
    ("indents", "the numbers of spaces at the start of {}", lambda line: len(line) - len(line.lstrip(" "))),
)
_LINE_CHANGES = (  # (name part, phrase around the filtered noun phrase, line -> line)
    ("", "{}", lambda line: line),
    ("stripped", "{}, without spaces at either end", str.strip),
    ("upper", "{}, in upper case", str.upper),
    ("first_words", "the first words of {} ('' for a blank line)", lambda line: (line.split() or [""])[0]),
)
_LINE_SUMMARIES = _word_summaries_joined_by("\n", "newlines")
_TEXT_LINES = (
    "# settings", "name = Ada", "port = 8080", "  debug = true", "Total: 42 items", "ERROR disk full",
    "warning: low memory", "   ", "  retry 3 times", "Done in 12 s", "hello world", "# end",
    "Step 1 of 4", "  x = y + 2", "ok", "Saved 7 files", "  ", "# 2 tasks left", "Ready",
)
# fmt: on


def _text_lines(rng: random.Random) -> tuple[str]:
    """3-6 lines from ``_TEXT_LINES`` joined by newlines: the line tasks' example argument (none is
    empty, so ``str.splitlines`` gives back exactly the lines joined)."""
    return ("\n".join(rng.sample(_TEXT_LINES, rng.randint(3, 6))),)


def line_function_prompts(seed: int = 0) -> list[str]:
    """Every line filter x change x summary task over ``text: str``, with 2-3 examples each: the
    number changes with the number summaries, the line changes with the line summaries."""
    parts = (_LINE_FILTERS, _LINE_NUMBER_CHANGES, _LINE_CHANGES, _LINE_SUMMARIES)
    return _number_and_item_prompts(
        random.Random(seed + 89), *parts, "text", "str", _text_lines, str.splitlines
    )


# HumanEval-shaped tasks over the fields of a record (``field-functions``): ``record`` is fields
# separated by commas (numbers, words, padded or empty fields, as a CSV line holds them); a field
# filter, a change that makes a number (its length, its digits, its letters) or a field (stripped, in
# lower case, backwards) of each kept field and a summary, composed as the list tasks are.
# fmt: off
_FIELD_FILTERS = (  # (name part, noun phrase, keep(field))
    ("number_fields", "the fields of the record that are whole numbers once stripped of "
     "spaces", lambda f: f.strip().lstrip("-").isdigit()),
    ("word_fields", "the fields of the record made of letters only", str.isalpha),
    ("padded_fields", "the fields of the record that start or end with a space", lambda f: f != f.strip()),
    ("capital_fields", "the fields of the record that start with a capital letter",
     lambda f: f[:1].isupper()),
    ("long_fields", "the fields of the record longer than four characters", lambda f: len(f) > 4),
    ("short_fields", "the fields of the record of at most two characters", lambda f: len(f) <= 2),
    ("fields", "all the fields of the record", lambda f: True),
)
_FIELD_NUMBER_CHANGES = (  # (name part, phrase around the filtered noun phrase, field -> number)
    ("field_lengths", "the lengths of {}", len),
    ("digit_counts", "the numbers of digits in {}", lambda f: sum(c.isdigit() for c in f)),
    ("letter_counts", "the numbers of letters in {}", lambda f: sum(c.isalpha() for c in f)),
    ("space_counts", "the numbers of spaces in {}", lambda f: f.count(" ")),
)
_FIELD_CHANGES = (  # (name part, phrase around the filtered noun phrase, field -> field)
    ("", "{}", lambda f: f),
    ("stripped", "{}, without spaces at either end", str.strip),
    ("lower", "{}, in lower case", str.lower),
    ("backwards", "{}, each spelled backwards", lambda f: f[::-1]),
)
_RECORD_FIELDS = (
    "12", "-3", "0", "2024", " 7", "3.5", "apple", "Pear", " fig", "kiwi ", "Oslo", "red", "BLUE", "Tom",
    "green tea", "x1", "n/a", "", "ok", " 42 ",
)
# fmt: on


def _record(rng: random.Random) -> tuple[str]:
    """3-6 fields from ``_RECORD_FIELDS`` joined by commas: the field tasks' example argument (no
    field holds a comma, so ``str.split(",")`` gives back exactly the fields joined)."""
    return (",".join(rng.sample(_RECORD_FIELDS, rng.randint(3, 6))),)


def _comma_fields(record: str) -> list[str]:
    """The fields of ``record``: its text between commas."""
    return record.split(",")


def field_function_prompts(seed: int = 0) -> list[str]:
    """Every field filter x change x summary task over ``record: str``, with 2-3 examples each: the
    number changes with the number summaries, the field changes with the field summaries."""
    parts = (_FIELD_FILTERS, _FIELD_NUMBER_CHANGES, _FIELD_CHANGES, _COMMA_WORD_SUMMARIES)
    return _number_and_item_prompts(random.Random(seed + 97), *parts, "record", "str", _record, _comma_fields)


# HumanEval-shaped tasks over the characters of a string (``text-functions``): a character filter, a
# per-character change and a summary, composed as the list tasks are.
# fmt: off
_CHARACTER_FILTERS = (  # (name part, noun phrase, keep)
    ("vowels", "the vowels in the text", lambda c: c in "aeiouAEIOU"),
    ("consonants", "the consonants in the text", lambda c: c.isalpha() and c not in "aeiouAEIOU"),
    ("digits", "the digits in the text", str.isdigit),
    ("uppercase", "the uppercase letters in the text", str.isupper),
    ("lowercase", "the lowercase letters in the text", str.islower),
    ("letters", "the letters in the text", str.isalpha),
    ("symbols", "the characters of the text that are neither letters, digits nor spaces",
     lambda c: not c.isalnum() and not c.isspace()),
    ("non_space", "the characters of the text that are not spaces", lambda c: not c.isspace()),
    ("chars", "all the characters of the text", lambda c: True),
)
_CHARACTER_CHANGES = (  # (name part, phrase around the filtered noun phrase, change)
    ("", "{}", lambda c: c),
    ("upper", "{}, in upper case", str.upper),
    ("lower", "{}, in lower case", str.lower),
    ("swapped", "{}, with their case swapped", str.swapcase),
    ("doubled", "{}, each written twice", lambda c: c * 2),
    ("shifted", "{}, each replaced by the next character in Unicode order", lambda c: chr(ord(c) + 1)),
)
_CHARACTER_SUMMARIES = (  # (name part, sentence, return annotation, summary of the changed characters)
    ("count", "Return how many of {} there are.", "int", len),
    ("joined", "Return {}, joined into one string in their original order.", "str", "".join),
    ("reversed", "Return {}, joined into one string in reverse order.", "str",
     lambda cs: "".join(reversed(cs))),
    ("sorted", "Return {}, sorted and joined into one string.", "str", lambda cs: "".join(sorted(cs))),
    ("distinct", "Return the distinct values among {}, sorted and joined into one string.", "str",
     lambda cs: "".join(sorted(set(cs)))),
    ("count_distinct", "Return how many different values there are among {}.", "int",
     lambda cs: len(set(cs))),
    ("first", "Return the first of {}, or None if there are none.", "Optional[str]",
     lambda cs: cs[0] if cs else None),
    ("last", "Return the last of {}, or None if there are none.", "Optional[str]",
     lambda cs: cs[-1] if cs else None),
    ("list", "Return a list of {}, in their original order.", "List[str]", list),
    ("most_common", "Return the most frequent of {}; the first to appear if several are equally "
     "frequent, or None if there are none.", "Optional[str]", lambda cs: max(cs, key=cs.count, default=None)),
)
_TEXT_SYMBOLS = ("!", "?", ",", ".", "-", "#", "&", "@")
# fmt: on


def _sample_text(rng: random.Random) -> str:
    """A short text for the character tasks' examples: 2-4 words in mixed case, sometimes a number,
    sometimes a symbol."""
    words = [
        rng.choice((str.lower, str.capitalize, str.upper))(w)
        for w in rng.sample(_LIST_WORDS, rng.randint(2, 4))
    ]
    if rng.random() < 0.5:
        words.insert(rng.randint(0, len(words)), str(rng.randint(1, 999)))
    text = " ".join(words)
    return text + rng.choice(_TEXT_SYMBOLS) if rng.random() < 0.5 else text


def text_function_prompts(seed: int = 0) -> list[str]:
    """Every character filter x change x summary task over ``text: str``, with 2-3 examples each."""
    parts = (_CHARACTER_FILTERS, _CHARACTER_CHANGES, _CHARACTER_SUMMARIES)
    return _composed_prompts(random.Random(seed + 37), parts, "text", "str", lambda r: (_sample_text(r),))


# GSM8K-shaped stories: several steps, plain sentences, no instruction appended.
# fmt: off
_STORY_TEMPLATES = (
    "{a} bakes {x} {item} every morning. {a} sells {y} of them each day and gives the rest to "
    "neighbours. After {z} days, how many {item} has {a} given to neighbours?",
    "A farmer has {x} hens. Each hen lays {y} eggs a week. The farmer sells eggs at ${p} per dozen. How "
    "much money does the farmer make in {z} weeks if all the eggs are sold?",
    "{a} has ${x}0. {a} spends a quarter of it on {item} and then half of what is left on a gift for {b}. "
    "How much money does {a} have left?",
    "A class of {x} students goes on a trip. Each bus holds {y} students, and each bus costs ${p}0 to "
    "rent. How much does it cost to rent enough buses?",
    "{a} is {y} years older than {b}. In {z} years the sum of their ages will be {x}0. How old is {b} now?",
    "A recipe needs {y} cups of flour for {z} dozen {item}. {a} wants to make {x} dozen. How many cups of "
    "flour does {a} need?",
    "{a} drives at {x} miles per hour for {y} hours and then at {z}0 miles per hour for {z} hours. What "
    "is the total distance {a} drives?",
    "A store had {x}0 {item}. On Monday it sold {y}0% of them and on Tuesday it sold {z} more. How many "
    "{item} are left?",
    "{a} wants to buy a bike that costs ${x}0. {a} already has ${y}0 and earns ${p} per hour mowing "
    "lawns. How many hours must {a} work to afford the bike?",
    "There are {x} red marbles and {y} times as many blue marbles in a jar. {a} removes {z} blue marbles. "
    "How many marbles are in the jar now?",
    "{a} ran {y} laps of a {x}0-meter track on each of {z} days. How many kilometers did {a} run in all?",
    "{a} buys {y} packs of {item}; each pack has {x} of them. {a} uses {z} a day. How many days do the "
    "{item} last?",
    "{a}'s garden has {x} rows of plants with {y} plants in each row. A storm destroys {z} plants in "
    "every row. How many plants survive?",
    "Tickets cost ${p} for children and twice as much for adults. {a} buys {y} child tickets and {z} "
    "adult tickets. How much does {a} pay?",
)
# fmt: on


def word_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped arithmetic stories with random names and numbers (no instruction appended)."""
    rng = random.Random(seed + 7)
    prompts = []
    for _ in range(count):
        a, b = rng.sample(_NAMES, 2)
        item, lo, hi = rng.choice(_ITEMS)
        values = dict(
            a=a,
            b=b,
            item=item,
            x=rng.randint(6, 60),
            y=rng.randint(2, 9),
            z=rng.randint(2, 5),
            p=rng.randint(lo, hi) + 1,
        )
        prompts.append(rng.choice(_STORY_TEMPLATES).format(**values))
    return prompts


# More GSM8K-shaped stories (``story-problems``): other quantities and question shapes than
# ``_STORY_TEMPLATES``; every slot is filled by :func:`_story_values`.
# fmt: off
_MORE_STORY_TEMPLATES = (
    "{a} earns ${p}0 a day at a bookshop, works {y} days a week and saves a third of the money. How "
    "much does {a} save in {w} weeks?",
    "A water tank holds {x}0 liters. It leaks {y} liters every hour while a pump adds {z} liters every "
    "hour. How many liters are in the tank after {h} hours?",
    "{a} reads {x} pages on Monday, twice as many on Tuesday, and {y} fewer pages on Wednesday than on "
    "Tuesday. How many pages does {a} read in the three days?",
    "A shirt costs ${x}. During a sale everything is {pct}% off. {a} buys {y} shirts at the sale price. "
    "How much does {a} spend?",
    "{a} and {b} share {x}0 stickers in the ratio {y}:{z}. How many stickers does each of them get?",
    "The perimeter of a rectangular garden is {x}0 meters and its width is {y} meters. What is the "
    "area of the garden?",
    "{a} buys {y} notebooks at ${p} each and {z} pens at ${q} each, and pays with a ${bill} bill. How "
    "much change does {a} get?",
    "A train leaves at {t}:00 and travels {x}0 kilometers at {y}0 kilometers per hour. At what time "
    "does it arrive?",
    "{a} scored {s1}, {s2} and {s3} on three tests. What score does {a} need on the fourth test to "
    "have an average of {avg}?",
    "A bakery bakes {x} loaves of bread an hour for {h} hours a day and sells each loaf for ${p}. How "
    "much does it earn in {w} days?",
    "{a} has {x} trading cards. {b} has {y} times as many, and {c} has {z}0 fewer than {b}. How many "
    "cards do the three of them have together?",
    "A phone plan costs ${x} a month plus ${p} for every gigabyte over {y} gigabytes. {a} used {used} "
    "gigabytes last month. How much was the bill?",
    "{a} walks {y} kilometers on each weekday and {z} times as far on each weekend day. How far does "
    "{a} walk in {w} weeks?",
    "A pizza is cut into {slices} slices. {a} eats {y}, {b} eats {z}, and {c} eats half of what is "
    "left. How many slices remain?",
    "{a} plants {x}0 tulip bulbs and {pct}% of them bloom. Each tulip that blooms has {y} petals. How "
    "many petals are there in the garden?",
    "The price of a bike was ${x}0. It went up by {pct}% and then down by ${y}0. What is the price "
    "now?",
    "{a} saves ${y} in the first week and each week saves ${z} more than the week before. How much has "
    "{a} saved after {w} weeks?",
    "A school orders {x} boxes of crayons with {y}0 crayons in each box. It gives {z}0 crayons to each "
    "of {w} classes. How many crayons are left?",
    "{a}'s car goes {y} kilometers on one liter of fuel, and fuel costs ${p} per liter. How much does "
    "the fuel for a {x}0-kilometer trip cost?",
    "A pool is {x} meters long, {y} meters wide and {z} meters deep. How many cubic meters of water "
    "does it hold when it is full?",
    "{a} is paid ${p} an hour for the first 40 hours of a week and one and a half times that for every "
    "hour after. How much does {a} earn in a week of {hours} hours?",
    "{a} buys a box of {x} chocolates, eats {y} a day for {z} days, and then gives {pct}% of the rest "
    "to {b}. How many chocolates does {a} have left?",
    "There are {x}0 people at a party. Two thirds of them are adults and the rest are children. Each "
    "child gets {y} balloons. How many balloons are handed out?",
    "A library has {x}0 books. It buys {y}0 new books every month for {z} months and gives away {w}0 "
    "old ones. How many books does it have now?",
    "{a} types {x} words per minute. How many minutes does {a} need to type {y} essays of {z}00 words "
    "each?",
    "A movie lasts {h} hours and {m} minutes. {a} watched {y}0 minutes of it yesterday. How many "
    "minutes of the movie are left?",
    "{a} buys {x} kilograms of rice at ${p} per kilogram and {y} kilograms of beans at ${q} per "
    "kilogram. How much does {a} spend altogether?",
    "A factory makes {x}0 toys a day. {pct}% of them are faulty and are thrown away. How many good "
    "toys does the factory make in {w} days?",
    "{a} is {y} times as old as {b}, who is {z} years old. How old will {a} be in {w} years?",
    "A rope is {x} meters long. {a} cuts it into pieces {y} meters long. How many whole pieces are "
    "there, and how many meters of rope are left over?",
    "{a} earns ${x} a week from a paper route and ${y}0 a month from chores. How much does {a} earn "
    "in a year?",
    "{a} collects {y} shells a day for {w} days. {b} collects twice as many shells in all. How many "
    "shells do they have together?",
    "A concert hall has {x} rows of {y}0 seats. {pct}% of the seats were sold at ${p} each. How much "
    "money did the concert take in?",
    "{a} orders {y} pizzas at ${p} each and adds a {pct}% tip. How much does {a} pay in total?",
    "{a} can wash a car in {y}0 minutes and {b} can wash one in {z}0 minutes. Working separately, how "
    "many cars do they wash together in {h} hours?",
    "{a} has {x} coins, all nickels and dimes. {y} of them are nickels. How much money does {a} have, "
    "in dollars?",
    "A store sells pens in packs of {y} for ${p} or one at a time for ${q} each. How much does {a} "
    "save by buying {x}0 pens in packs?",
    "{a} jogs {y} times around a square park whose sides are {x}0 meters long. How many meters does "
    "{a} jog?",
    "The temperature was {x} degrees at noon. It fell {y} degrees every hour for {z} hours and then "
    "rose {w} degrees. What was the temperature then?",
    "A gardener waters {x} plants with {z} liters each every day. How many liters does the gardener "
    "use in {w} weeks?",
    "{a} spends {pct}% of a ${x}0 gift card on games and ${y} on snacks. How much is left on the card?",
    "{a} has {x}0 minutes of homework. {y}0% of the time is math and the rest is split equally between "
    "reading and science. How many minutes does {a} spend on science?",
    "A cyclist rides {x} kilometers in {y} hours. At the same speed, how many hours does a {z}00-"
    "kilometer ride take?",
    "At a bake sale {a} sold {y} cakes for ${p} each and {x} cookies for ${q} each. The ingredients "
    "cost ${z}0. How much profit did {a} make?",
)
_STORY_NAMES = ("Abdul", "Beatriz", "Carmen", "Diego", "Emma", "Farid", "Grace", "Hugo", "Ines", "Jamal",
                "Keiko", "Liam", "Maya", "Noah", "Olga", "Pablo", "Rania", "Sven", "Tara", "Umar", "Vera",
                "Wanda", "Xavier", "Yusuf", "Zoe", "Arjun", "Bella", "Chloe", "Dmitri", "Esther")
# fmt: on


def _story_values(rng: random.Random) -> dict[str, int | str]:
    """Names and numbers for every slot of the story templates (story, chain and compare problems)."""
    a, b, c = rng.sample(_STORY_NAMES, 3)
    scores = [rng.randint(60, 100) for _ in range(3)]
    values: dict[str, int | str] = dict(
        a=a,
        b=b,
        c=c,
        x=rng.randint(6, 60),
        y=rng.randint(2, 9),
        z=rng.randint(2, 5),
        w=rng.randint(2, 8),
        h=rng.randint(2, 8),
        m=rng.choice((10, 15, 20, 25, 30, 40, 45, 50)),
        p=rng.randint(2, 15),
        q=rng.randint(1, 5),
        pct=rng.choice((10, 15, 20, 25, 30, 40, 50, 60, 75)),
        t=rng.randint(6, 11),
        slices=rng.choice((8, 10, 12, 16)),
        hours=rng.randint(42, 55),
        bill=rng.choice((50, 100)),
        s1=scores[0],
        s2=scores[1],
        s3=scores[2],
        avg=rng.randint(75, 95),
    )
    values["used"] = int(values["y"]) + rng.randint(1, 9)
    return values


def _template_stories(templates: Sequence[str], count: int, rng_seed: int) -> list[str]:
    """``count`` stories, each a random template of ``templates`` filled by :func:`_story_values`."""
    rng = random.Random(rng_seed)
    return [rng.choice(templates).format(**_story_values(rng)) for _ in range(count)]


def story_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories from ``_MORE_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_MORE_STORY_TEMPLATES, count, seed + 11)


# Longer GSM8K-shaped stories (``chain-problems``): three to five sentences whose quantities feed
# each other (the last answer needs every earlier one), units to convert, fractions of what is
# left; every slot is filled by :func:`_story_values`.
# fmt: off
_CHAIN_STORY_TEMPLATES = (
    "{a} is making lemonade for a school fair. Each pitcher needs {y} lemons and {z} cups of sugar. "
    "Lemons cost ${q} each and a bag of sugar with {x} cups costs ${p}. {a} makes {w} pitchers. How "
    "much do the lemons and sugar cost if {a} has to buy whole bags of sugar?",
    "A bookshop received {x}0 new books on Monday. It sold a quarter of them on Tuesday and {y} more "
    "on Wednesday. On Thursday another {z}0 books arrived. How many new books does the shop have at "
    "the end of Thursday?",
    "{a} practices the piano for {m} minutes every weekday and twice as long on Saturday and Sunday. "
    "How many hours does {a} practice in {w} weeks?",
    "{a} has a {x}0-page novel. {a} read {y}0 pages last week and plans to read the rest over the "
    "next {z} days, the same number of pages each day. How many pages a day is that?",
    "A family drives {x}0 kilometers to visit {b}. Their car uses {y} liters of fuel for every 100 "
    "kilometers, and fuel costs ${q} per liter. How much does fuel for the round trip cost?",
    "{a} buys {w} packs of stickers with {x} stickers in each pack. {a} gives {y} stickers to each of "
    "{z} friends and puts half of what is left in an album. How many stickers are not in the album?",
    "A gym charges a ${p}0 sign-up fee and ${x} a month. Another gym has no sign-up fee but charges "
    "${y} more each month. Which gym is cheaper over {w} months, and by how much?",
    "{a}'s team scored {x} points in the first game, {y} more points in the second game than in the "
    "first, and half as many in the third game as in the second. How many points did the team "
    "score in the three games?",
    "A baker uses {y} eggs for each cake and {z} eggs for each batch of muffins. On Saturday the baker "
    "makes {w} cakes and {h} batches of muffins. Eggs come in cartons of a dozen. How many cartons "
    "does the baker open?",
    "{a} earns ${p} an hour babysitting. This month {a} babysat {y} hours each weekend for {z} "
    "weekends and spent ${x} of the money on a jacket. How much of the money is left?",
    "A garden center sells {x}0 plants in spring. In summer it sells {pct}% fewer plants than in "
    "spring, and in autumn it sells {y}0 more than in summer. How many plants does it sell in the "
    "three seasons?",
    "{a} has ${x} and saves ${y} every week. {b} has ${x}0 and saves ${z} every week. After {w} weeks "
    "they put their money together to buy a ${bill} bike. How much money is left over?",
    "A school has {w} classes with {x} students each. Every student needs {y} notebooks, and notebooks "
    "come in packs of {slices}. How many packs must the school buy?",
    "{a} walks the dog for {m} minutes in the morning and {y}0 minutes in the evening. {b} walks the "
    "same dog for half an hour at noon. How many hours is the dog walked in a week?",
    "A farmer plants {x} rows of corn with {y}0 plants in each row. Each plant gives {z} ears of corn, "
    "and the farmer sells the corn in bags of a dozen ears for ${p} a bag. How much money does the "
    "farmer make?",
    "{a} bought {y} shirts for ${x} each and {z} pairs of jeans that cost twice as much as a shirt. "
    "The store gave {a} a {pct}% discount on the whole purchase. How much did {a} pay?",
    "A tank holds {x}0 liters of water. On Monday {pct}% of the water is used, and on Tuesday {y}0 "
    "liters more are used. Then the tank is filled with {z}0 liters. How much water is in it now?",
    "{a} is {y} years older than {b}. {c} is twice as old as {b}. If {b} is {x} years old, what is "
    "the sum of the three ages in {w} years?",
    "A bus leaves the station at {t}:{m} and makes {y} stops. It spends {z} minutes at each stop and "
    "drives for {h}0 minutes in all. At what time does it reach the last stop?",
    "{a} runs a lemonade stand. Each cup sells for ${q} and costs {a} half a dollar to make. On "
    "Friday {a} sold {x} cups and on Saturday {y} times as many. What was {a}'s profit over the two "
    "days?",
    "A box of {x} crayons is shared among {a}, {b} and {c}. {a} takes a third of them, {b} takes "
    "{y} crayons, and {c} takes half of what is left. How many crayons remain in the box?",
    "{a} wants to paint a fence that is {x}0 meters long. {a} paints {y} meters an hour, and {b} "
    "paints {z} meters an hour. If they paint together, how many hours will the fence take?",
    "A theater sells {x}0 adult tickets at ${p} each and {y}0 child tickets at half that price. It "
    "pays ${z}00 for the show. How much money does the theater keep?",
    "{a} has ${x}0 in a savings account. Each month {a} adds ${y}0 and takes out ${z}. How much "
    "money is in the account after {w} months?",
    "A recipe makes {y} dozen cookies with {z} cups of flour. {a} needs {x}0 cookies for a party and "
    "flour comes in {slices}-cup bags. How many bags of flour does {a} need?",
    "{a} downloads a {x}00-megabyte game at {y} megabytes per second. The download pauses for {m} "
    "seconds halfway through. How many seconds does the download take in all?",
    "A hotel has {x} floors with {y}0 rooms on each floor. On Friday {pct}% of the rooms were booked, "
    "and each booked room paid ${p}0. How much did the hotel take in that night?",
    "{a} swims {y}0 laps of a {z}5-meter pool every day for {w} days. {b} swims the same total "
    "distance in {h} days. How many meters does {b} swim each day?",
    "{a} collects stamps. {a} had {x} stamps, bought {y} packs of {z}0 stamps, and then gave a fifth "
    "of all the stamps to {b}. How many stamps does {a} have now?",
    "A pet shop has {x} fish tanks. Each tank holds {y} fish, and each fish eats {z} grams of food a "
    "day. A tub of fish food holds {w}00 grams. How many days does one tub last?",
    "{a} earns ${x}0 a day and works {y} days a week. {a} pays {pct}% of the earnings in tax and "
    "spends ${p}0 a week on food. How much does {a} have left each week?",
    "On a field trip, {w} buses each carry {x} students and {y} teachers. At the museum every group "
    "of {slices} people needs one guide. How many guides are needed?",
    "{a} is reading a series of {y} books with {x}0 pages each. {a} has finished {z} of the books and "
    "reads {h}0 pages a day. How many more days will {a} need to finish the series?",
    "A fruit stand buys {x}0 apples for ${p}0 and sells them for ${q} each. {pct}% of the apples "
    "spoil before they are sold. How much profit does the stand make on the rest?",
    "{a} and {b} are {x}0 kilometers apart and cycle toward each other. {a} rides at {y} kilometers "
    "per hour and {b} at {z} kilometers per hour. How many hours pass before they meet?",
    "{a} makes bracelets with {y}0 beads each. Beads come in bags of {x}0 that cost ${q} each. {a} "
    "wants to make {w} bracelets and sell them for ${p} each. What is {a}'s profit?",
    "A printer prints {x} pages a minute. {a} prints {y} copies of a {z}0-page report and then {w} "
    "copies of a {h}-page letter. How many minutes does the printer run?",
    "{a} buys a used car for ${x}00 and pays ${y}0 a month for insurance and ${z}0 a month for fuel. "
    "How much has the car cost {a} after {w} months?",
    "A classroom has {x} desks in rows of {y}. The teacher adds {z} more rows of the same size and "
    "then removes {w} desks. How many desks are in the classroom?",
    "{a} keeps {x} chickens. Each chicken lays {y} eggs a week. {a} keeps {z} eggs a week for the "
    "family and sells the rest at ${p} a dozen. How much does {a} earn in {w} weeks?",
)
# fmt: on


def chain_problems(count: int, seed: int = 0) -> list[str]:
    """Longer GSM8K-shaped stories from ``_CHAIN_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_CHAIN_STORY_TEMPLATES, count, seed + 13)


# GSM8K-shaped comparisons (``compare-problems``): two or three people, shops or plans measured
# on the same quantities, the question asking for a difference, a ratio or which one wins and by
# how much; prices in dollars and cents, durations in hours and minutes.
# fmt: off
_COMPARE_STORY_TEMPLATES = (
    "{a} walks {y} kilometers every day. {b} walks {z} kilometers more than {a} on weekdays and "
    "nothing on weekends. Who walks farther in a week, and by how many kilometers?",
    "Shop A sells a notebook for ${q}.{m} and Shop B sells a pack of {y} of the same notebooks for "
    "${x}. {a} needs {w} packs' worth of notebooks. How much does {a} save by buying at the cheaper "
    "shop?",
    "{a} has {x} marbles, {b} has {y} times as many as {a}, and {c} has {z}0 fewer than {b}. How "
    "many more marbles does {c} have than {a}?",
    "{a} scored {s1}, {s2} and {s3} on three tests. {b}'s average on the same tests was {avg}. "
    "Whose average is higher, and by how many points?",
    "{a}'s phone plan costs ${x} a month plus ${q} for every gigabyte over {y}. {b}'s plan costs "
    "${p}0 a month with no extra charges. Last month {a} used {h}0 gigabytes. Who paid more, and "
    "how much more?",
    "A red car travels {x}0 kilometers on {y} liters of fuel. A blue car travels {z}0 kilometers on "
    "{w} liters. Which car uses less fuel to travel {h}00 kilometers, and how many liters does it "
    "save?",
    "{a} spends {m} minutes on homework each weekday and {h} hours on Saturday. {b} spends {t}0 "
    "minutes every day of the week. Who spends more time on homework in a week, and by how many "
    "minutes?",
    "A bakery sold {x} muffins on Monday and {pct}% more on Tuesday. A café nearby sold {y}0 "
    "muffins on each of the two days. How many more muffins did the bakery sell than the café?",
    "{a} is {x} years old. {b} is {y} years younger than {a}, and {c} is three times as old as {b}. "
    "How many years older is {c} than {a}?",
    "A small pizza has {slices} slices and costs ${p}. A large pizza has twice as many slices and "
    "costs ${x}. For {w}0 slices, how much cheaper is it to buy only large pizzas than only small "
    "ones?",
    "{a} reads {y}0 pages a day and {b} reads {z}0 pages a day. They both start a {x}00-page book "
    "on the same day. How many days after {b} finishes does {a} finish?",
    "Team Red has {w} players who each score {y} points a game. Team Blue has {h} players who each "
    "score {z} points a game. Over {x} games, which team scores more, and by how many points?",
    "{a} earns ${p} an hour and works {hours} hours a week. {b} earns a salary of ${x}00 a week. "
    "Who earns more in {w} weeks, and by how much?",
    "A train covers {x}0 kilometers in {y} hours. A bus covers the same distance at {z}0 "
    "kilometers per hour. How much longer, in minutes, does the bus take?",
    "{a} bought {y} shirts at ${x} each with a {pct}% discount. {b} bought the same shirts at "
    "another store for ${p} less each, without a discount. Who paid less, and by how much?",
    "{a}'s garden is {x} meters long and {y} meters wide. {b}'s garden is {z} meters longer and "
    "{w} meters narrower. Whose garden has the larger area, and by how many square meters?",
    "A school raised ${x}0 in a bake sale and {y} times as much in a fun run. The year before it "
    "raised ${z}00 in all. How much more did it raise this year?",
    "{a} saves ${y} every week and {b} saves ${z} every week, but {b} started with ${x}. After how "
    "many weeks will {a} have saved more than {b}, if {a} saves more each week?",
    "A large bottle holds {x} liters of juice and costs ${p}. A small bottle holds half a liter "
    "and costs ${q}.{m}. What is the difference in cost per liter between the small and the large "
    "bottles?",
    "{a} runs {y} laps of a {x}00-meter track, and {b} runs {z} kilometers on the road. Who runs "
    "farther, and by how many meters?",
    "Farm A has {x} cows that give {y} liters of milk a day each. Farm B has {w} fewer cows that "
    "each give {z} liters more. Which farm produces more milk in a week, and by how much?",
    "{a} takes {m} minutes to bike to school and {b} takes {h} times as long to walk. If school "
    "starts at {t}:00, how much earlier than {a} must {b} leave home?",
    "A game costs ${x} at full price. Store A takes {pct}% off, and Store B takes ${y} off and "
    "then another ${z} off at the register. Which store is cheaper, and by how much?",
    "{a} has {x} stickers and {b} has {y}0. {b} gives {a} {z} stickers every day. After {w} days, "
    "how many more stickers does the one with more have?",
    "A plumber charges ${p}0 for a visit plus ${x} an hour. An electrician charges ${y}0 an hour "
    "with no visit fee. For a {z}-hour job, which one costs less, and how much less?",
    "{a}'s class has {x} students and {pct}% of them walk to school. {b}'s class has {y}0 students "
    "and {w} of them walk. Which class has more walkers, and by how many?",
    "{a} drinks {y} glasses of water a day and {b} drinks {z} more. A glass holds {m}0 "
    "milliliters. How many liters more does {b} drink in {w} weeks?",
    "The morning shift at a factory packs {x}0 boxes an hour for {t} hours. The evening shift packs "
    "{y}0 boxes an hour for {z} hours. How many more boxes does one shift pack than the other?",
    "{a} has ${x}. {b} has ${y} more than half of what {a} has. {c} has twice as much as {b}. How "
    "much more money does {c} have than {a}?",
    "A cinema sells {x}0 tickets on Friday at ${p} each and {y}0 on Saturday at ${q} more each. "
    "How much more money does it take in on Saturday than on Friday?",
    "{a} plants {y} rows of {x} tomato plants and {b} plants {z} rows of {w}0 pepper plants. Each "
    "tomato plant gives {h} tomatoes. Who has more plants, and how many tomatoes does {a} harvest?",
    "{a}'s commute is {y}0 minutes each way on {w} days a week. {b} works from home {z} days a "
    "week and commutes {m} minutes each way on the other days. How many hours more does {a} "
    "commute in a month of 4 weeks?",
    "A printer prints {x} pages a minute and a newer one prints {y} more pages a minute. How many "
    "minutes does the newer printer save on a job of {z}00 pages?",
    "{a} buys {w} bags of apples with {x} apples in each. {b} buys {y}0 loose apples. They give "
    "away {z} apples each. How many more apples does the one with more have left?",
    "Gym A charges ${x} a month. Gym B charges ${y} a visit. {a} goes to the gym {z} times a week. "
    "Which gym is cheaper for {a} over {w} weeks, and by how much?",
    "{a} typed {x} words a minute last year and types {pct}% faster now. {b} types {y}0 words a "
    "minute. How many more words can the faster typist type in {m} minutes?",
    "A rectangular pool is {x} meters by {y} meters and a round pool is {z} meters across. Using "
    "3.14 for pi, which pool has the larger surface, and by how many square meters?",
    "{a} sold {x} raffle tickets, {b} sold {y} more than {a}, and {c} sold half as many as {a} and "
    "{b} together. How many tickets did the three sell, and who sold the most?",
    "{a}'s rent is ${x}00 a month and rises {pct}% next year. {b}'s rent is ${y}00 a month and "
    "stays the same. Next year, whose rent is higher, and by how much a year?",
    "A cyclist rides {x} kilometers an hour for {y} hours and a runner runs {z} kilometers an hour "
    "for {w} hours. How many times farther does the cyclist go?",
)
# fmt: on


def compare_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped comparison stories from ``_COMPARE_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_COMPARE_STORY_TEMPLATES, count, seed + 17)


# GSM8K-shaped stories where something is split, packed, shared or paid for and something is left
# over (``remainder-problems``): remainders and whole containers, change from a bill, times that
# roll past the hour, what is left after several takes; every slot is filled by :func:`_story_values`.
# fmt: off
_REMAINDER_STORY_TEMPLATES = (
    "{a} has {x}0 cookies and packs them in boxes of {w}. How many boxes can {a} fill, and how many "
    "cookies are left over?",
    "{a} pays for {y} sandwiches at ${p} each with a ${bill} bill. How much change does {a} get?",
    "A bus holds {x} passengers. How many buses does a school need to take {y}00 students on a "
    "trip?",
    "A movie starts at {t}:{m} and lasts {h} hours and {x} minutes. At what time does it end?",
    "{a} shares {x}0 marbles equally among {w} friends and keeps what is left. How many marbles "
    "does each friend get, and how many does {a} keep?",
    "A baker makes {x}0 rolls and puts them in bags of {slices}. The rolls that do not fill a bag "
    "are sold for ${q} each. How much money do the loose rolls bring in?",
    "{a} has ${x}0. {a} spends a quarter of it on a book and ${y} on lunch, then gives half of what "
    "is left to {b}. How much money does {a} have now?",
    "A ribbon is {x}0 centimeters long. {a} cuts as many {z}0-centimeter pieces from it as possible. "
    "How long is the piece that is left?",
    "{a} works from {t}:{m} in the morning until {h}:{m} in the afternoon with a {m}-minute break. "
    "How many minutes does {a} work?",
    "Eggs come in cartons of 12. A farm collects {x}0 eggs. How many full cartons does it fill, "
    "and how many more eggs would it need to fill one more carton?",
    "{a} buys {w} notebooks at ${p} each and {y} pens at ${q} each. {a} pays with ${bill}. How much "
    "change does {a} get back?",
    "A class of {x} students splits into teams of {y}. Students who are left over join the last "
    "team. How many teams are there, and how many students are in the last team?",
    "{a} reads {y}0 pages a day. The book has {x}0 pages more than {z}00. On which day does {a} "
    "finish the book, and how many pages are read on that last day?",
    "A tank holds {x}0 liters of water. {a} fills buckets of {w} liters from it until no full "
    "bucket can be filled. How many buckets are filled, and how much water stays in the tank?",
    "{a} saves ${y} a week toward a bike that costs ${x}0. After how many weeks can {a} buy the "
    "bike, and how much money is left over then?",
    "A train leaves at {t}:{m} and the trip takes {x}0 minutes. It arrives {y} minutes late. At "
    "what time does it arrive?",
    "{a} has {x}0 stamps. {a} gives {pct}% of them to {b} and a third of the rest to {c}. How many "
    "stamps does {a} have left?",
    "Pencils are sold in packs of {w} for ${q}. {a} needs {x} pencils for the class. How many packs "
    "must {a} buy, and how much do they cost?",
    "{a} buys {y} tickets at ${p} each, and {b} buys {z} tickets at the same price. They pay "
    "together with two ${bill} bills. How much change do they get?",
    "A farmer has {x}0 apples and puts them in crates of {y}0. Apples that do not fill a crate are "
    "given to neighbors, {z} to each. How many neighbors get apples?",
    "{a} leaves home at {t}:{m}, walks for {x} minutes to the station and waits {y} minutes for a "
    "{h}0-minute train ride. At what time does {a} arrive?",
    "A pizza has {slices} slices. {w} friends each eat {y} slices. How many pizzas must they order, "
    "and how many slices are left over?",
    "{a} earns ${p} an hour and works {hours} hours. After paying ${x} for the bus and ${y}0 for "
    "food, {a} puts half of the rest in the bank. How much goes in the bank?",
    "A rope of {x} meters is cut into pieces of {w}0 centimeters. How many pieces are there, and how "
    "many centimeters are left?",
    "{a} has {h} hours to finish {x} math problems. Each problem takes {y} minutes. How many "
    "problems can {a} finish, and how many minutes are left over?",
    "A library has {x}0 books to put on shelves that hold {y}0 books each. How many shelves are "
    "full, and how many books are on the shelf that is not full?",
    "{a} buys a jacket for ${x}.{m} and a hat for ${p}.{m} and pays with ${bill}. How much change "
    "does {a} get?",
    "A clock shows {t}:{m}. What time will it show {x}0 minutes later, and how many minutes after "
    "that is the next full hour?",
    "{a} has {x}0 candies. {a} eats {y} and divides the rest equally into {w} bags. How many "
    "candies are in each bag, and how many are left over?",
    "A group of {x}0 hikers crosses a river in boats that carry {w} hikers each. Each crossing "
    "takes {m} minutes. How many crossings are needed, and how long do they take?",
    "{a} bakes {y} trays of {x} muffins. {a} sells them in boxes of {w}. How many boxes can {a} "
    "sell, and how many muffins are left?",
    "A store has {x}0 oranges. It sells {pct}% of them on Monday and {y}0 on Tuesday. The rest are "
    "packed in bags of {z}. How many full bags are there?",
    "{a} starts a {h}-hour shift at {t}:{m}. After {y} hours {a} takes a {m}-minute break. At what "
    "time does the shift end if the break is added at the end?",
    "Tickets cost ${p} each. {a} has ${x}0. How many tickets can {a} buy, and how much money is "
    "left?",
    "{a}, {b} and {c} share ${x}0 so that {a} gets ${y} more than {b} and {b} gets the same as {c}. "
    "How much does each of them get?",
    "A box holds {slices} crayons. {a} has {x}0 crayons and {b} has {y}0. They put all their "
    "crayons together into boxes. How many boxes are full, and how many crayons are loose?",
    "A recipe needs {z} eggs for every {w} cupcakes. {a} has {x} eggs. How many cupcakes can {a} "
    "make, and how many eggs are not used?",
    "{a} runs {y} laps of a {x}0-meter track. How many full kilometers is that, and how many meters "
    "more?",
    "{a} buys {w} kilograms of rice at ${q}.{m} a kilogram and {y} kilograms of beans at ${p} a "
    "kilogram, and pays with ${bill}. How much change does {a} get?",
    "A school day has {t} lessons of {m} minutes with {z}-minute breaks between them. School starts "
    "at 8:00. At what time does the last lesson end?",
)
# fmt: on


def remainder_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories with something left over, from ``_REMAINDER_STORY_TEMPLATES`` (no
    instruction appended)."""
    return _template_stories(_REMAINDER_STORY_TEMPLATES, count, seed + 19)


# GSM8K-shaped stories where a quantity grows, shrinks or repeats over days, weeks or rounds
# (``growth-problems``): a fixed amount added each time, doubling and halving, a percent up or down,
# a pattern that changes every day, two quantities growing at different rates; every slot is filled
# by :func:`_story_values`.
# fmt: off
_GROWTH_STORY_TEMPLATES = (
    "{a} saves ${y} in the first week and ${z} more each week than the week before. How much has "
    "{a} saved after {w} weeks?",
    "A sunflower is {x} centimeters tall and grows {y} centimeters every day. How tall is it after "
    "{h} weeks?",
    "The number of bacteria in a dish doubles every hour. It starts with {x}0 bacteria. How many "
    "are there after {w} hours?",
    "{a} runs {z} kilometers on the first day of training and adds {q} kilometer every day. How many "
    "kilometers does {a} run in the first {t} days altogether?",
    "A bike costs ${x}0. Its price goes up by {pct}% in spring and then down by ${y}0 in a summer "
    "sale. What does the bike cost after the sale?",
    "A pond has {x}0 fish. Every year the number of fish grows by {pct}%. How many fish are in the "
    "pond after 2 years?",
    "{a} reads {y} pages on the first day and each day reads {z} pages more than the day before. "
    "How many pages has {a} read after {w} days?",
    "A snail climbs {z} meters up a wall each day and slides back {q} meter each night. The wall is "
    "{x} meters high. On which day does the snail reach the top?",
    "{a} has {x}0 stickers and gives away {y} stickers every day. How many days until {a} has "
    "fewer than {z}0 stickers left?",
    "A town has {x},000 people. Each year {y}00 people move in and {z}00 move out. How many people "
    "live in the town after {h} years?",
    "{a} plants {y} trees in the first year and twice as many trees each year as the year before. "
    "How many trees has {a} planted after {z} years?",
    "A car's value is ${x},000. It loses {pct}% of its value each year. What is it worth after 2 "
    "years?",
    "{a} starts the month with ${x}0 and spends ${y} every weekday and ${p} on each weekend day. How "
    "much money is left after {h} full weeks?",
    "A library lends {x}0 books in the first week, {y}0 more in the second week, and twice as many "
    "in the third week as in the second. How many books are lent in the three weeks?",
    "{a} does {y} push-ups on Monday and adds {z} every day after that. On which day of the week "
    "does {a} first do more than {x} push-ups?",
    "A tank has {x}0 liters of water and loses {y} liters every hour through a leak, while a hose "
    "adds {z} liters every hour. How many liters are in the tank after {h} hours?",
    "{a} earns ${p} an hour this year. Next year {a}'s pay goes up by {pct}%. How much more does {a} "
    "earn for a {hours}-hour week next year?",
    "A baker sells {x} loaves on Monday. Each day sales go up by {y} loaves. Loaves cost ${q} each. "
    "How much money does the baker make from Monday to Friday?",
    "{a} has {y} guppies. Every month the number of guppies triples, and {a} gives {z} away at the "
    "end of each month. How many guppies does {a} have after 3 months?",
    "The temperature is {z} degrees at {t} in the morning and rises {y} degrees every hour until "
    "noon. What is the temperature at noon?",
    "{a}'s collection has {x} coins and grows by {w} coins a month. {b}'s collection has {y}0 coins "
    "and grows by {z} coins a month. After how many months does {a} have more coins than {b}?",
    "A video has {x}0 views on the first day. Each day it gets {pct}% more views than the day "
    "before. How many views does it get on the third day?",
    "{a} puts ${x}0 in a savings account that pays {z}% interest each year. The interest is added to "
    "the account. How much is in the account after 2 years?",
    "A tree is {y} meters tall and grows {m} centimeters a year. How many years until it is {x} "
    "meters tall?",
    "{a} swims {y} laps on the first day of the month and two more laps every day. How many laps "
    "does {a} swim on day {x}?",
    "A store had {x}0 toys on Monday. It sold half of them on Tuesday, received {y}0 new toys on "
    "Wednesday, and sold a third of its toys on Thursday. How many toys are left?",
    "{a}'s phone battery is at {pct}%. It loses {z}% every {m} minutes while {a} plays a game. How "
    "many minutes can {a} play before the battery is empty?",
    "{a} walks {y},000 steps on Monday. Each day {a} walks {w}00 more steps than the day before. How "
    "many steps does {a} walk in the whole week from Monday to Sunday?",
    "A pile of sand has {x}0 kilograms. Each trip a truck removes a quarter of what is left. How "
    "many kilograms are left after 2 trips?",
    "{a} learns {y} new words a day and forgets {q} of them by the next day. How many new words does "
    "{a} know after {h} weeks?",
    "The price of a ticket was ${p} last year. This year it went up by {pct}%, and next year it will "
    "go up by ${q} more. What will a ticket cost next year?",
    "{a} starts with {y} friends in a game. Each week every player invites {z} new players. How many "
    "players are there after 3 weeks if nobody leaves?",
    "A candle is {x} centimeters long and burns {z} millimeters every {m} minutes. How many hours "
    "does it take to burn down completely?",
    "{a} and {b} both start with ${x}. {a} adds ${y} every week and {b} adds ${z} every week. How "
    "much more money does {a} have than {b} after {t} weeks?",
    "A farm has {x} chickens. Each month it buys {w} more chickens and sells {q}. How many chickens "
    "does the farm have after a year?",
    "{a} scores {s1} points in the first game. In each game after that {a} scores {y} points more "
    "than in the game before. What is {a}'s total after {z} games?",
    "A school has {x}0 students this year. The number of students grows by {pct}% next year and by "
    "another {y}0 students the year after. How many students will it have in two years?",
    "{a} drinks {w} glasses of water on Monday and one more glass each day. How many glasses does "
    "{a} drink from Monday to Saturday?",
    "A factory makes {x}0 chairs in its first week. Each week it makes {y}0 more chairs than the "
    "week before. How many chairs has it made after {z} weeks?",
    "A puppy weighs {y} kilograms at {z} months and gains {m}0 grams a week. How many kilograms does "
    "it weigh {t} weeks later?",
)
# fmt: on


def growth_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories where a quantity changes step by step, from ``_GROWTH_STORY_TEMPLATES``
    (no instruction appended)."""
    return _template_stories(_GROWTH_STORY_TEMPLATES, count, seed + 31)


# GSM8K-shaped stories of buying and selling (``shopping-problems``): several items at their own
# prices, discounts and coupons, sales tax and tips, bulk deals, a bill split between friends, a
# seller's cost, price and profit; every slot is filled by :func:`_story_values`.
# fmt: off
_SHOPPING_STORY_TEMPLATES = (
    "{a} buys {w} shirts at ${p} each and {y} pairs of socks at ${q} a pair. How much does {a} "
    "spend in all?",
    "A jacket costs ${x}0. It is on sale for {pct}% off, and {a} has a coupon for ${y} off the sale "
    "price. How much does {a} pay for the jacket?",
    "{a}, {b} and {c} eat dinner together. The meal costs ${x}0 and they leave a {pct}% tip. They "
    "split the total equally. How much does each of them pay?",
    "A shop sells pencils at ${q} each or in packs of {slices} for ${p}. How much does {a} save by "
    "buying {w} packs instead of the same number of single pencils?",
    "{a} buys {y} kilograms of apples at ${q} a kilogram and {z} kilograms of pears at ${p} a "
    "kilogram. Sales tax is {pct}%. What is the total with tax?",
    "A farmer sells eggs at ${p} for a box of {slices}. On Saturday the farmer sells {x}0 eggs. How "
    "much money does the farmer take in?",
    "{a} buys a bike for ${x}0 and sells it a year later for {pct}% less than that. How much money "
    "does {a} lose on the bike?",
    "A bakery sells cupcakes for ${q} each. Each cupcake costs the bakery {m} cents to make. How much "
    "profit does the bakery make on {x}0 cupcakes?",
    "{a} has ${bill} and buys {w} notebooks at ${p} each. With the change, {a} buys as many ${q} "
    "erasers as possible. How many erasers does {a} buy?",
    "The grocery store has a deal: buy {z} cans of soup, get one free. Each can costs ${q}. How "
    "much does {a} pay for {x} cans of soup?",
    "{a} orders {y} pizzas at ${p} each and pays a ${z} delivery fee and a ${w} tip. {a} and {h} "
    "friends split the cost equally. How much does each person pay?",
    "A toy store buys board games for ${p} each and sells them for {pct}% more. How much profit "
    "does the store make if it sells {x} board games?",
    "{a} wants to buy a video game that costs ${x}. {a} already has ${y} and earns ${z} for each "
    "car washed. How many cars must {a} wash to buy the game?",
    "A box of {slices} granola bars costs ${p}. Single granola bars cost ${q} each. {a} needs {x}0 "
    "bars for a class trip. What is the cheapest way to buy them, and what does it cost?",
    "{a} spends ${x} on groceries on Monday, twice as much on Wednesday, and ${y} less than "
    "Wednesday on Saturday. How much does {a} spend on groceries that week?",
    "A phone costs ${x}0 in one payment, or ${y}0 a month for {t} months. How much more does {a} "
    "pay by choosing the monthly plan?",
    "{a} buys {w} tickets to a concert at ${x} each. There is a service fee of ${q} per ticket and "
    "a ${z} fee for the whole order. What is the total cost?",
    "A clothing store marks up every item by {pct}% over what it paid. It paid ${x} for a sweater. "
    "During a sale it takes ${y} off the marked price. What is the sale price?",
    "{a} sells lemonade for ${q} a cup. The lemons and sugar for each batch of {slices} cups cost "
    "${p}. {a} sells {x} cups. How much profit does {a} make if only whole batches are made?",
    "{a} has a gift card worth ${x}0. {a} buys {y} books at ${p} each and a bookmark for ${q}. How "
    "much is left on the gift card?",
    "A restaurant bill for {w} people comes to ${x}0. Sales tax of {z}% is added, and then a tip of "
    "{pct}% of the bill before tax. What do they pay in total?",
    "{a} pays ${p} an hour to park downtown. {a} parks for {h} hours on {z} days a week. How much "
    "does parking cost {a} in {w} weeks?",
    "Notebooks cost ${q} each. The store gives {pct}% off when a customer buys {slices} or more. How "
    "much does a teacher pay for {x} notebooks?",
    "{a} buys {y} plants for the garden at ${p} each, {z} bags of soil at ${w} each, and a shovel "
    "for ${x}. How much does {a} spend?",
    "A market sells {x}0 melons on Saturday at ${z} each and {y}0 on Sunday at a price ${q} lower. "
    "How much money does it take in over the weekend?",
    "{a} and {b} buy a present together for ${x}. {a} pays ${y} more than {b}. How much does each "
    "of them pay?",
    "A coffee shop sells a small coffee for ${q} and a large one for ${z}. In a morning it sells "
    "{x} small and {y}0 large coffees. How much money does it take in?",
    "{a} has ${x}0 to spend on a party. The cake costs ${p}0, the balloons cost ${y} and each of the "
    "{slices} guests gets a ${q} party bag. How much money is left?",
    "A shoe store has a sale: the second pair costs half price. {a} buys two pairs at ${x} each. "
    "How much does {a} pay, and how much is saved?",
    "{a} buys {w} pounds of coffee beans at ${p} a pound every month. Next month the price goes up "
    "by {pct}%. How much more will {a} spend next month?",
    "A movie ticket costs ${p} for adults and ${z} less for children. A family of {y} adults and {w} "
    "children goes to the movies. How much do the tickets cost?",
    "{a} sells old comic books online. {a} sells {x} books at ${q} each and pays the website {pct}% "
    "of the sales as a fee. How much money does {a} keep?",
    "A store buys {x}0 hats for ${p} each. It sells {pct}% of them at ${y}0 each and the rest at "
    "half that price. How much profit does it make?",
    "{a} buys {slices} cans of paint at ${p} each and returns {z} unopened cans for a full refund. "
    "How much did {a} spend on paint in the end?",
    "{a} earns ${p} an hour babysitting and wants to buy shoes that cost ${x}0. {a} has already "
    "saved ${y}0. How many hours must {a} babysit to afford the shoes?",
    "A bag of rice costs ${p} and feeds a family for {w} days. How much does the family spend on "
    "rice in a year of 365 days if they buy only whole bags?",
    "{a} buys {y} tickets for a fair at ${q} each. Each ride takes {z} tickets. {a} goes on {w} "
    "rides. How many tickets are left, and what were they worth?",
    "A sandwich costs ${p} and a drink costs ${q}. A lunch deal gives both for ${z} less. How much "
    "do {x} workers save by all taking the lunch deal?",
    "{a} owes ${x}0 on a loan and pays back ${y} every week. After {w} weeks, {a} pays off half of "
    "what is left. How much is still owed?",
    "A store sells {t} kinds of cookies. {a} buys {z} boxes of each kind at ${p} a box and gets "
    "{pct}% off the whole order. How much does {a} pay?",
)
# fmt: on


def shopping_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of buying and selling, from ``_SHOPPING_STORY_TEMPLATES`` (no
    instruction appended)."""
    return _template_stories(_SHOPPING_STORY_TEMPLATES, count, seed + 41)


# Rates (``rate-problems``): speed, distance and time, work shared between people or machines,
# pages, laps or litres per hour or day, filling and draining, a recipe scaled to more servings;
# every slot is filled by :func:`_story_values`.
# fmt: off
_RATE_STORY_TEMPLATES = (
    "{a} drives at {x} kilometers per hour for {y} hours and then at {p}0 kilometers per hour for "
    "{z} more hours. How far does {a} drive in all?",
    "A train leaves at {t} in the morning and travels {x}0 miles at {p}0 miles per hour. At what "
    "time does it arrive?",
    "{a} can paint a fence in {y} hours and {b} can paint it in {w} hours. How long does it take "
    "them to paint the fence together?",
    "A printer prints {x} pages a minute. How many minutes does it take to print {w} copies of a "
    "report that is {p}0 pages long?",
    "{a} reads {x} pages every day. The book has {p}00 pages and {a} has already read {y}0 of them. "
    "How many more days until {a} finishes the book?",
    "A tank holds {x}0 liters of water. A pipe fills it at {y} liters a minute while a leak drains "
    "{q} liters a minute. How long does it take to fill the empty tank?",
    "{a} runs {z} laps of a {x}0-meter track in {m} minutes. What is {a}'s average speed in meters "
    "per minute?",
    "A recipe for {w} servings uses {y} cups of flour and {z} eggs. How much flour and how many eggs "
    "are needed for {slices} servings?",
    "{a} types {x} words a minute and {b} types {p} words a minute more. How many more words does "
    "{b} type in {h} minutes?",
    "A factory machine makes {x} bottles an hour. The factory runs {w} machines for {hours} hours a "
    "week. How many bottles does it make in a week?",
    "{a} walks to school at {z} miles per hour and the school is {y} miles away. {a} must arrive by "
    "8:00. What is the latest time {a} can leave home?",
    "Two cars start from the same town and drive in opposite directions, one at {x} miles per hour "
    "and the other at {p}0 miles per hour. How far apart are they after {z} hours?",
    "{a} earns ${p} an hour and works {h} hours a day, {z} days a week. How many weeks must {a} work "
    "to earn ${x}00?",
    "A snail climbs {y} feet up a wall each day and slides back one foot each night. The wall is "
    "{x} feet tall. On which day does the snail reach the top?",
    "{a} can fold {x} paper cranes an hour and {b} folds half as many. How many hours do they need "
    "together to fold {p}00 cranes?",
    "A faucet drips {m} drops a minute and {slices}0 drops make a milliliter. How many milliliters "
    "of water are wasted in a day?",
    "{a} cycles {x} kilometers to work at {z}0 kilometers per hour and comes back at {y}0 "
    "kilometers per hour. How many minutes does the round trip take?",
    "A plane flies {x}00 kilometers in {y} hours. At the same speed, how long does a flight of "
    "{p}00 kilometers take?",
    "{a} swims {w} lengths of a {x}-meter pool every morning. How many kilometers does {a} swim in "
    "{t} weeks of {z} mornings each?",
    "A bakery makes {x} loaves of bread an hour with {y} bakers. How many loaves an hour can it make "
    "if {z} more bakers join and everyone works at the same speed?",
    "{a} charges a phone from {pct}% to 100%. The phone gains 1% every {y} minutes. How long does "
    "the charge take in hours and minutes?",
    "A hose fills a pool at {x} gallons a minute. The pool holds {p}000 gallons. If {a} starts at "
    "{t} in the morning, when will the pool be full?",
    "{a} uses {y} liters of gas for every {x}0 kilometers. How much gas does a trip of {p}00 "
    "kilometers need, and what does it cost at ${q} a liter?",
    "A conveyor belt moves {x} boxes a minute. How many hours does it take to move {p}000 boxes?",
    "{a} knits {y} rows of a scarf each evening. The scarf needs {x}0 rows. {a} starts on a Monday. "
    "On which day of the week does {a} finish?",
    "A bus travels {x} kilometers between stops and stops {m} times on its route. It averages {p}0 "
    "kilometers per hour. How long is the route in minutes, not counting the stops?",
    "{a} and {b} live {x}0 miles apart and drive toward each other, {a} at {p}0 miles per hour and "
    "{b} at {z}0 miles per hour. How long until they meet?",
    "A candle burns {q} centimeter every {m} minutes. It is {x} centimeters tall. How many hours can "
    "it burn?",
    "{a} can mow a lawn in {m} minutes. {a} has {w} lawns to mow on Saturday and takes a {y}-minute "
    "break between lawns. How long does {a} work in all?",
    "A heart beats {x} times every {z}0 seconds. How many times does it beat in an hour?",
    "{a} saves ${y} every week and {b} saves ${w} every week. {b} started with ${x} more. After how "
    "many weeks have they saved the same amount?",
    "A river flows at {z} kilometers per hour. A boat goes {p}0 kilometers per hour in still water. "
    "How long does a trip of {x} kilometers downstream take?",
    "{a} packs {x} boxes an hour and {b} packs {y} fewer. Working together, how many hours does it "
    "take them to pack {p}0 boxes?",
    "A cyclist rides {x} kilometers on Monday and {pct}% farther each day after that. How far does "
    "the cyclist ride on Wednesday?",
    "A pump empties a flooded basement at {x} liters a minute. The basement holds {p}000 liters of "
    "water. How many hours does the pump run?",
    "{a} walks {z} kilometers an hour and {b} jogs {w} kilometers an hour. {b} starts {m} minutes "
    "after {a} on the same path. How long does it take {b} to catch up?",
    "A school bus uses a liter of fuel every {y} kilometers. It drives {x} kilometers each school day. "
    "How many liters does it use in {t} weeks of five school days?",
    "{a} writes {y} pages of a novel a day on weekdays and {w} pages a day on weekends. How many "
    "weeks does a {p}00-page novel take?",
    "A clock gains {z} minutes every day. It is set right at noon on a Sunday. What time does it "
    "show at noon the next Sunday?",
    "{a} can shovel a driveway in {m} minutes, and with {b}'s help it takes {y} minutes less. How "
    "long would {b} take alone?",
)
# fmt: on


def rate_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of rates (speed, work, flow, pages or laps per hour), from
    ``_RATE_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_RATE_STORY_TEMPLATES, count, seed + 47)


# Measurement (``measure-problems``): lengths, perimeters and areas, boxes and tanks by volume,
# weights and capacities, unit conversions, tiles, fences and paint; every slot is filled by
# :func:`_story_values`.
# fmt: off
_MEASURE_STORY_TEMPLATES = (
    "A rectangular garden is {x} meters long and {y} meters wide. {a} wants to put a fence around "
    "it with a gate {q} meter wide. How many meters of fencing does {a} need?",
    "A kitchen floor measures {w} meters by {z} meters. Each square tile covers a quarter of a "
    "square meter and a box holds {slices} tiles. How many boxes of tiles are needed?",
    "{a} has a ribbon {x}0 centimeters long and cuts it into pieces of {y} centimeters each. How "
    "many whole pieces does {a} get, and how many centimeters are left over?",
    "A fish tank is {x} inches long, {w} inches wide and {slices} inches high. How many cubic inches "
    "of water does it hold when it is filled to the top?",
    "{a} walls off a square pen with a side of {y} meters for the goats. What is the area of the "
    "pen, and how much larger is a pen with sides {z} meters longer?",
    "A bag of rice weighs {x} kilograms. {a} pours it into jars that hold {p}00 grams each. How "
    "many jars does {a} fill completely?",
    "{a} is {x}0 inches tall and {b} is {y} inches shorter. How tall is {b} in feet and inches?",
    "A wall is {w} meters wide and {z} meters high with a window of {q} square meters. A liter of "
    "paint covers {y} square meters. How many liters does {a} need for two coats?",
    "A wooden board is {x} feet long. {a} saws off {z} shelves of {y} inches each. How many inches "
    "of the board are left?",
    "A rectangular pool is {p} meters long, {w} meters wide and {q} meters deep. How many liters of "
    "water fill it if one cubic meter holds a thousand liters?",
    "{a} jogs around a rectangular park {x}0 meters long and {y}0 meters wide {z} times. How many "
    "kilometers does {a} jog?",
    "A jug holds {y} liters of juice. {a} pours glasses of {m}0 milliliters for a party of {x} "
    "guests. How many jugs does {a} need so everyone gets a glass?",
    "A carpet costs ${p} a square meter. {a}'s living room is {w} meters by {y} meters. How much "
    "does carpet for the whole room cost?",
    "A box is {y} centimeters long, {z} centimeters wide and {w} centimeters tall. How many cubes "
    "with one-centimeter sides fit inside it?",
    "{a} measures a table as {x} inches long. How long is it in centimeters, using 2.5 centimeters "
    "for each inch?",
    "A truck can carry {x}00 kilograms. Each crate of apples weighs {y}0 kilograms. How many crates "
    "can the truck carry in {z} trips?",
    "A picture is {y} inches wide and {w} inches tall. {a} puts a frame {q} inch wide all around it. "
    "What is the area of the frame alone?",
    "{a} fills a bucket that holds {w} gallons with a cup that holds a pint. There are 8 pints in a "
    "gallon. How many cups of water does it take?",
    "A roll of wallpaper covers {y} square meters. A bedroom has four walls, each {z} meters wide and "
    "{q} meters tall. How many rolls does {a} buy?",
    "A road is {x} kilometers long. Signs stand at the start and then every {p}00 meters along it. "
    "How many signs are there in all?",
    "{a} bakes a cake in a pan {y} inches by {slices} inches and cuts it into squares {q} inch on a "
    "side. How many squares does {a} get?",
    "A square field has a perimeter of {x}0 meters. What is its area in square meters?",
    "{a}'s suitcase weighs {x} pounds and the airline limit is {p}0 pounds. {a} adds {w} books of "
    "{q} pounds each. How far over or under the limit is the suitcase?",
    "A cylinder-shaped water tower holds {x}000 liters when full and is {pct}% full now. How many "
    "liters must be added to fill it?",
    "{a} cuts a rope {x} meters long into {z} equal parts and then cuts each part in half. How long "
    "is each small piece in centimeters?",
    "A sandbox is {w} feet by {z} feet and {a} wants sand {q} foot deep. Sand comes in bags of "
    "half a cubic foot. How many bags does {a} need?",
    "A bottle holds {y}00 milliliters of shampoo and {a} uses {slices} milliliters a day. How many "
    "full weeks does the bottle last?",
    "A hallway is {x} feet long and {z} feet wide. A runner rug covers all but one foot on every "
    "side. What is the area of the rug?",
    "{a} has {x} meters of fencing and wants a rectangular pen {y} meters wide. How long can the pen "
    "be if all the fencing is used?",
    "A pack of flour weighs {w} pounds, and there are 16 ounces in a pound. A cookie recipe uses "
    "{p} ounces. How many batches does one pack make?",
    "A swimming lane is {x} meters long. {a} swims {y} lengths and {b} swims {m}0 meters more than "
    "{a}. How many meters does {b} swim?",
    "A shelf is {x}0 centimeters wide. Each book is {z} centimeters thick. How many books fit on "
    "{w} such shelves?",
    "A triangle-shaped sail has a base of {y} meters and a height of {slices} meters. How many square "
    "meters of cloth does it use?",
    "{a} plants tomato seedlings {m} centimeters apart in a row {x} meters long, with one at each "
    "end. How many seedlings fit in the row?",
    "A crate holds {slices} bottles of {y}00 milliliters each. How many liters are in {w} crates?",
    "The map scale is 1 centimeter for {p} kilometers. Two towns are {y} centimeters apart on the "
    "map. How far apart are they really?",
    "{a} lines a square tray {x} centimeters on a side with paper. The paper sheet is {p}0 "
    "centimeters square. How many square centimeters of paper are left?",
    "A brick is {z}0 centimeters long. {a} lays a path of bricks end to end that is {x} meters long. "
    "How many bricks does the path need?",
    "A bathtub is {w} feet long, {z} feet wide and {q} foot deep and fills to {pct}% of its depth. "
    "How many cubic feet of water does it hold?",
    "{a} weighs {x}0 kilograms and {b} weighs {y} kilograms less. On a seesaw, how much weight must "
    "be added to {b}'s side to balance it?",
)
# fmt: on


def measure_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of measurement (lengths, areas, volumes, weights, unit conversions),
    from ``_MEASURE_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_MEASURE_STORY_TEMPLATES, count, seed + 53)


# Time and calendars (``schedule-problems``): clock times and durations, timetables, days of the
# week and months, ages now and later, shifts and rotas; every slot is filled by
# :func:`_story_values`.
# fmt: off
_SCHEDULE_STORY_TEMPLATES = (
    "{a} starts homework at {t}:15 in the evening and spends {m} minutes on math, {y}0 minutes on "
    "reading and {z}0 minutes on science. At what time does {a} finish?",
    "A movie is {h} hours and {m} minutes long with a {q}0-minute intermission. If it begins at "
    "{t}:30, when does it end?",
    "{a} is {x} years old and {b} is {y} years younger. In how many years will {a} be twice as old "
    "as {b} was {z} years ago?",
    "A bus that seats {x} people leaves the depot every {m} minutes starting at {t}:00 in the "
    "morning. How many buses leave before noon, and how many seats do they offer?",
    "{a} was born on a Tuesday. {x}0 days later {a}'s family held a party. On which day of the week "
    "was the party?",
    "A nurse works {h}-hour shifts, {z} shifts a week. Each shift has a {m}-minute unpaid break. How "
    "many paid hours does the nurse work in {w} weeks?",
    "A concert has {p} bands that each play for {y}0 minutes, with {q}0 minutes between bands. The "
    "first band starts at {t} in the evening. When does the last band finish?",
    "{a}'s grandmother is {x} years older than {a}'s mother, who is {p}0 years older than {a}. {a} "
    "is {y}. How old is the grandmother?",
    "A train ride takes {h} hours and {m} minutes. {a} wants to arrive by {t}:45 in the evening. "
    "What is the latest departure time?",
    "A school day has {y} lessons of {m} minutes, a {z}0-minute lunch and two breaks of {q}0 "
    "minutes. If school starts at 8:{w}0, when does it end?",
    "{a} sleeps from {t}:30 at night until 6:{w}5 in the morning. How many hours and minutes of "
    "sleep is that, and how many in a week?",
    "A library book is due {y} weeks after {a} borrows it on the {z}th of March. March has 31 days. "
    "On what date is it due?",
    "{a} and {b} take turns walking the dog: {a} every {y} days and {b} every {w} days. Both walked "
    "it today. In how many days will both walk it on the same day again?",
    "A marathon runner finishes in {h} hours {m} minutes. Her pace was the same for each of the "
    "{x} kilometers she ran. How many minutes did each kilometer take?",
    "A factory runs {z} shifts a day of {h} hours each, and each shift change overlaps by {q}0 "
    "minutes. How many minutes a day do two shifts work at the same time?",
    "{a}'s brother is {z} years older than {a}. In {w} years the brother will be {x}. How old is "
    "{a} now, and how old was {a} {y} years ago?",
    "{a} joins a cooking class that meets every {w} days starting on a Monday and misses {q} of the "
    "meetings. On which day of the week is the {y}th meeting, and how many has {a} been to by then?",
    "{a}'s plane leaves at {t}:20 in the morning local time and lands {h} hours later in a city {z} "
    "hours behind. What is the local time when {a} lands?",
    "{a} practices the violin {m} minutes on weekdays and {y}0 minutes on each weekend day. How many "
    "hours is that in a month of {w} weeks?",
    "A parking garage charges ${q} for the first hour and ${z} for every extra half hour. {a} parks "
    "from {t}:10 until {h}:40 in the afternoon. How much does {a} pay?",
    "In {y} years {a} will be {p}0. {b} is {z} years older than {a} is now. How old is {b} now?",
    "A baker puts bread in the oven at {t}:{w}5. It bakes for {m} minutes and cools for {y}0 "
    "minutes. When is it ready to slice?",
    "A club meets on the first Saturday of each month and {a} has been to {y} meetings. June 1 is "
    "a Wednesday. On what date is the June meeting, and how many meetings will {a} have attended "
    "after it?",
    "A relay team has {z} runners; each runs {x} laps taking {y} minutes a lap. If the race starts "
    "at {t}:00, when does the last runner finish?",
    "{a} waters the plants every {z} days and fertilizes them every {w} days. Both happened on May "
    "1. What is the next date in May when both happen?",
    "{a} counts the flashes of a lighthouse that flashes every {y} seconds, from {t} in the evening "
    "until midnight. How many flashes does {a} count?",
    "{a} is three times as old as {b}. In {p} years {a} will be twice as old as {b}. How old are "
    "they now?",
    "A TV series has {x} episodes of {m} minutes each. {a} watches {y} episodes a night. How many "
    "nights and how many hours does the series take?",
    "A ferry crossing takes {m} minutes and the ferry waits {q}0 minutes at each side. It makes its "
    "first trip at {t}:00. How many one-way trips can it finish by 6 in the evening?",
    "{a}'s watch loses {z} minutes every day. It was set right on Monday at noon. What time does it "
    "show when the real time is noon {w} days later?",
    "A project needs {x} hours of work. {a} works {y} hours each weekday and {z} hours on Saturday. "
    "How many weeks does the project take?",
    "A museum tour for up to {x} visitors starts every {m} minutes from 9:00 to {t}:00 in the "
    "evening. How many tours start in one day, and how many visitors can they take in all?",
    "{a} was {y} when {b} was born. Now {b} is {x}. How old is {a} now, and how old will {a} be "
    "when {b} turns {p}0?",
    "A rocket launch countdown starts at {h} hours {m} minutes. After {y}0 minutes there is a hold "
    "of {q}0 minutes. How much time is left when the countdown resumes?",
    "{a}'s pharmacy is open from 8 in the morning to {t} in the evening on weekdays and {z} hours "
    "each on Saturday and Sunday, with a clerk paid ${p} an hour. What does the clerk earn a week?",
    "{a} studies for {h} hours starting at {t}:00 and sets an alarm to ring every {m} minutes. How "
    "many times does it ring?",
    "A year-long course has {x} lessons. Lessons are on {z} days each week with {y} weeks off for "
    "holidays. How many weeks long is the course?",
    "{a}'s age plus {b}'s age is {p}0. {a} is {y} years older than {b}. How old was {b} {z} years "
    "ago?",
    "{a} lives by a clock tower that strikes once at each quarter hour and as many times as the hour "
    "on the hour. How many strikes does {a} hear from {t} in the morning to noon in {w} days?",
    "A gardener plants a row every {m} minutes from {t}:00 in the morning with a {y}0-minute lunch "
    "break. How many rows are planted by {h} in the afternoon?",
)
# fmt: on


def schedule_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of time and calendars (clock times, durations, timetables, days of the
    week, ages), from ``_SCHEDULE_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_SCHEDULE_STORY_TEMPLATES, count, seed + 59)


# Parts of a whole (``portion-problems``): fractions and percents of a group, an amount or a time,
# then a part of what is left (GSM8K's "a third of the rest" chains); every slot is filled by
# :func:`_story_values`.
# fmt: off
_PORTION_STORY_TEMPLATES = (
    "A class has {x} students. {pct}% of them walk to school, a third of the rest ride bikes, and the "
    "others come by bus. How many students come by bus?",
    "{a} picked {x}0 strawberries. {a} ate a fifth of them, gave half of what remained to {b} and used "
    "{y} in a smoothie. How many strawberries are left?",
    "A farm has {x}0 animals. Two fifths of them are chickens, a quarter of the others are goats, and "
    "the rest are cows. How many cows are on the farm?",
    "Of the {x}0 people at a concert, {pct}% bought a T-shirt at ${p} each. How much money did the "
    "T-shirt stand take in?",
    "{a} spends a quarter of a ${x}0 allowance on lunch, a third of what is left on bus fares and saves "
    "the rest. How much does {a} save?",
    "A jar holds {x}0 marbles. {pct}% of them are red, and half of the others are blue. The rest are "
    "green. How many green marbles are in the jar?",
    "{a} orders a {slices}-slice pizza and eats {q} slices, then {b} eats half of what is left. What "
    "fraction of the pizza is left over?",
    "A school library has {x}00 books. {pct}% of them are fiction, and one in every {z} of the other "
    "books is about science. How many science books does the library have?",
    "{a} has read {y} chapters of a book and has {p} chapters still to read. What fraction of the "
    "chapters has {a} read, and what percent is that?",
    "In a survey of {x}0 people, {pct}% said they prefer tea to coffee. Half of the tea drinkers take "
    "it with milk. How many people in the survey drink tea with milk?",
    "{a} earns ${x}00 a month and pays {pct}% of it in rent. A fifth of what is left goes on food. How "
    "much does {a} have after rent and food?",
    "A bakery made {x}0 cookies. It sold three quarters of them in the morning and {y} more in the "
    "afternoon. What percent of the cookies were not sold?",
    "{a}'s garden has {z} rows of {x} plants. One row in every {z} is tomatoes and each tomato plant "
    "gives {y} tomatoes. How many tomatoes does the garden give?",
    "A team won {pct}% of its {x}0 games this season and lost {y} games. The rest ended in a tie. How "
    "many games were ties?",
    "{a} has ${x}0. {a} gives {b} a fifth of it and {c} a quarter of what remains. How much money "
    "does {a} keep?",
    "A water tank is two thirds full and holds {x}0 liters right now. How many liters does the full "
    "tank hold, and how many more liters fit in it?",
    "{a} spent {h} hours at the fair and was on rides for {pct}% of that time. For how many minutes "
    "was {a} not on a ride?",
    "At a party there are {x}0 guests. Half of them are children, and {y} of the adults are teachers. "
    "What fraction of all the guests are teachers?",
    "A recipe makes {y} dozen rolls. {a} bakes three quarters of the recipe and gives away a third of "
    "the rolls. How many rolls does {a} keep?",
    "Of the {x} emails {a} got today, {pct}% were ads and a third of the rest were from work. How many "
    "emails were neither ads nor from work?",
    "A farmer plants wheat on {pct}% of a {x}0-acre field and corn on half of the rest. The remaining "
    "land is left empty. How many acres are empty?",
    "{a} got {pct}% of {x} quiz questions right on the first try and half of the missed ones on the "
    "second try. How many questions did {a} never get right?",
    "A box of {x}0 chocolates is shared: {a} takes a quarter, {b} takes a third of what is left, and "
    "{c} takes {y}. How many chocolates are still in the box?",
    "A store has {x}0 shirts. {pct}% of them sell in a sale, and a fifth of the unsold shirts go back "
    "to the factory. How many shirts does the store still have?",
    "{a} has walked {z} kilometers, which is two fifths of the trail. How long is the whole trail, and "
    "how far is it to the end?",
    "Of the {x}0 seeds that {a} planted, {pct}% sprouted, and birds ate {y} of the sprouts. How many "
    "young plants are left?",
    "A bus has {x} passengers. At the first stop a third of them get off and {y} get on. At the second "
    "stop half of the passengers get off. How many passengers are still on the bus?",
    "{a} has a {x}0-meter roll of ribbon, uses {pct}% of it for gifts and cuts the rest into {z} equal "
    "pieces. How long is each piece?",
    "In a crate of {x}0 light bulbs one in every {w} is broken. {a} replaces the broken ones with new "
    "bulbs that cost ${q} each. How much does {a} spend?",
    "A choir has {x} members. {pct}% of them are sopranos and a quarter of the others are altos. The "
    "rest sing tenor or bass, split evenly. How many members sing bass?",
    "{a} baked {y} trays of {x} muffins. The family ate a sixth of them, and {a} sold the rest for ${q} "
    "each. How much money did {a} make?",
    "A town has {x}00 households. {pct}% of them have a dog, and a fifth of the dog owners also have a "
    "cat. How many households have both a dog and a cat?",
    "{a}'s phone battery is at {pct}%. Watching videos uses {y}% of the battery every {m} minutes. How "
    "many minutes of video can {a} watch before the battery runs out?",
    "A parking lot has {x}0 spaces and {pct}% of them are taken in the morning. At noon a quarter of "
    "the parked cars leave and {y} new cars arrive. How many spaces are free at noon?",
    "{a} and {b} share ${x}0 so that {a} gets two thirds of it. {a} then spends half of that share. "
    "How much more money does {b} have than {a} now?",
    "A hotel has {x}0 rooms. On Friday {pct}% of them are booked, and on Saturday {y} more rooms are "
    "booked. What percent of the rooms are booked on Saturday?",
    "{a} is {pct}% of the way through a {h}-hour drive. How many hours and minutes of driving are "
    "left?",
    "A fruit stand has {x}0 pieces of fruit: a third are apples, a quarter are pears and the rest are "
    "plums. {a} buys half of the plums. How many plums are left on the stand?",
    "{a} poured {y}00 milliliters of juice, drank {pct}% of it and shared the rest equally among {z} "
    "cups. How much juice is in each cup?",
    "A museum had {x}00 visitors on Sunday. {pct}% of them were children, and a tenth of the adults "
    "had free tickets. Adult tickets cost ${p}. How much did the museum take in from adult tickets?",
)
# fmt: on


def portion_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of parts of a whole (fractions and percents of a group, an amount or a
    time, then a part of what is left), from ``_PORTION_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_PORTION_STORY_TEMPLATES, count, seed + 61)


# Means and averages (``average-problems``): the mean of a few values, a total from a mean, the value
# that brings a mean to a goal, averages per day, per person or per trip, a mean that moves when a
# value joins or leaves; every slot is filled by :func:`_story_values`.
# fmt: off
_AVERAGE_STORY_TEMPLATES = (
    "{a} scored {s1}, {s2} and {s3} on three math quizzes. What is {a}'s average score on the quizzes?",
    "{a} wants an average of {avg} over four spelling tests and scored {s1}, {s2} and {s3} on the first "
    "three. What score does {a} need on the fourth test?",
    "A bakery sold {x} muffins on Monday, {p}0 on Tuesday and {y}0 on Wednesday. On average, how many "
    "muffins did it sell per day over those three days?",
    "The {z} players of a basketball team scored an average of {p} points each in a game. {a} scored "
    "{y} of the team's points. How many points did the other players score altogether?",
    "{a} walked {y} kilometers on Saturday and {q} kilometers on Sunday, and then {w} kilometers on each "
    "of the five weekdays. What was {a}'s average distance per day that week?",
    "Five friends collected cans for recycling. Their average was {x} cans each. {a} collected {p} more "
    "cans than the average. How many cans did the other four collect in total?",
    "A class of {x} students has an average test score of {avg}. A new student joins and scores {s1}. "
    "What is the class average now, to one decimal place?",
    "{a} read {y}0 pages in the first week and {z}0 pages in the second week of a {t}-week reading "
    "challenge. How many pages a week must {a} average over the remaining weeks to finish {x}0 pages?",
    "The temperatures at noon for four days were {p} degrees, {y} degrees, {q} degrees and {w} degrees. "
    "What was the average noon temperature?",
    "{a} drove {x}0 miles in {h} hours and then {y}0 miles in {z} more hours. What was {a}'s average "
    "speed for the whole trip?",
    "{a} eats {y} apples from a bag of {x}, and the bag gets {p}00 grams lighter. What is the average "
    "weight of an apple {a} ate, in grams, and how much would all {x} apples weigh at that average?",
    "The average age of {a}, {b} and {c} is {x}. {a} is {y} years older than {b}, and {c} is {x} years "
    "old. How old is {b}?",
    "{a} earned ${p}0 on Monday, ${y}0 on Tuesday and nothing on Wednesday at a summer job. What did "
    "{a} earn on average per day over those three days?",
    "A runner ran {w} laps of a track with an average lap time of {t}0 seconds. The first lap took {x} "
    "seconds. What was the average time of the other laps?",
    "{a}'s bowling scores this week were {s1}, {s2}, {s3} and {avg}. What is {a}'s average score, and "
    "how far is the best game above it?",
    "Four baskets hold {x}, {p}, {y} and {w} eggs. If the eggs were shared out evenly among the four "
    "baskets, how many would each hold, and how many would be left over?",
    "A shop's average sales over {w} days were ${x}0 a day. How much must it sell on the next day to "
    "raise the average to ${x}{q} a day over all the days?",
    "{a} spends an average of {m} minutes a day on homework from Monday to Thursday and {h} hours on "
    "Sunday. What is the average per day over those five days, in minutes?",
    "Three bags hold {x}, {p} and {y} pounds of rice. {a} pours the rice into bags of equal weight, "
    "three bags again. How many pounds of rice does each bag hold now?",
    "The average of five numbers is {x}. Four of the numbers are {p}, {y}, {w} and {q}. What is the "
    "fifth number?",
    "A team's average score over {w} games was {p}. After one more game the average went up by one "
    "point. How many points did the team score in that game?",
    "{a} saved ${x} in January, ${p} in February and ${y}0 in March. How much must {a} save in April "
    "for the average over the four months to be ${avg}?",
    "{a} bought {y} shirts at ${p} each and {z} shirts at ${x} each. What was the average price paid "
    "per shirt?",
    "A car used {w} liters of fuel on a {x}0-kilometer trip and {y} liters on a {p}0-kilometer trip. "
    "On average, how many kilometers did it travel per liter over both trips?",
    "There are {x} students in one class with an average height of 1{y}0 centimeters and {y} students "
    "in another class with an average of 1{q}0 centimeters. What is the average height of all the "
    "students?",
    "{a} tracked the rain for a week: {q} millimeters on two days, {w} millimeters on three days and "
    "none on the others. What was the average rainfall per day?",
    "A group of {z} hikers carried {x} kilograms of gear between them. When {a} joined with {y} "
    "kilograms, what was the average load per hiker?",
    "{a} has taken {w} tests with an average score of {avg}. One score, {s1}, is dropped. What "
    "is the average of the remaining tests, to one decimal place?",
    "A printer printed {x}0 pages in the morning over {h} hours and {p}0 pages in the afternoon over "
    "{z} hours. What was its average number of pages per hour for the day?",
    "{a} sold lemonade for {t} days and made ${x}, ${p}, ${y} and ${q} on the first four days. Over all "
    "{t} days the average was ${avg} a day. How much did {a} make over the other days?",
    "The average weight of {z} puppies in a litter is {w} kilograms. One puppy weighs {q} kilograms. "
    "What is the average weight of the other puppies?",
    "{a} practiced the violin for {m} minutes, {h}0 minutes and {y}5 minutes on three evenings. How many "
    "minutes must {a} practice on the fourth evening to average an hour a night?",
    "Four pumpkins at a fair weighed {x}, {p}, {y} and {w} pounds. {a} brought a fifth pumpkin that "
    "raised the average weight by {q} pounds. How much did {a}'s pumpkin weigh?",
    "A cyclist rode uphill at {p} kilometers per hour for {h} hours and downhill at {x} kilometers per "
    "hour for {z} hours. What was the cyclist's average speed for the ride?",
    "{a} and {b} each kept count of the birds they saw for {w} days. {a} saw an average of {x} birds a "
    "day and {b} saw {y} fewer a day on average. How many birds did they see altogether?",
    "A restaurant served {x}0 meals on Friday, {p}0 on Saturday and {y}0 on Sunday. How many meals does "
    "it need to serve on Monday to keep its average for the four days at {t}0 or more?",
    "At a fundraiser, {x} people gave ${p} each, {y} gave ${w}0 each and {a} gave ${bill}. What was "
    "the average gift?",
    "{a} timed {w} trips to school: the average was {t} minutes, and the slowest trip took {p} minutes "
    "longer than the average. If the slowest trip is left out, what is the average of the others?",
    "A fruit stand sold an average of {x} pears a day for {w} days and an average of {y} pears a day for "
    "the next {z} days. What was its average number of pears per day over the whole time?",
    "{a}'s monthly phone bills were ${p}, ${x} and ${y}0 over three months. By how much does the highest "
    "bill differ from the average bill?",
)
# fmt: on


def average_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of means and averages (the mean of a few values, a total from a mean, the
    value that brings a mean to a goal, a mean that moves when a value joins or leaves), from
    ``_AVERAGE_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_AVERAGE_STORY_TEMPLATES, count, seed + 167)


# Quantities defined by each other (``relation-problems``): one amount given, the others twice as
# many, a few fewer, half as many or a share more than another's, ages now, before and later, and a
# question about a total, a difference or what changes after a gift or a trade; every slot is filled
# by :func:`_story_values`.
# fmt: off
_RELATION_STORY_TEMPLATES = (
    "{a} has {x} marbles. {b} has twice as many marbles as {a}, and {c} has {y} fewer marbles than {b}. "
    "How many marbles do the three of them have together?",
    "{a} is {x} years old. {b} is {y} years younger than {a}, and {c} is half as old as {b} will be in "
    "{w} years. How old is {c}?",
    "In {w} years, {a} will be twice as old as {b} is now. {b} is {x} years old. How old is {a} today?",
    "A farmer has {x} cows. He has {z} times as many chickens as cows and {y} more goats than cows. How "
    "many animals does the farmer have in all?",
    "{a} collected {p} shells on the beach. {b} collected {y} more than {a}, and {c} collected as many "
    "as {a} and {b} together. How many shells did {c} collect?",
    "{a} has ${x}. {b} has ${p} less than three times what {a} has. How much money do they have "
    "together?",
    "A library has {x}0 fiction books. It has {pct}% fewer nonfiction books than fiction books. How "
    "many books does the library have altogether?",
    "{a} has {x} stickers, which is {y} more than twice the number {b} has. How many stickers does {b} "
    "have?",
    "{a}'s dog weighs {x} pounds. {b}'s dog weighs {z} times as much, and {c}'s dog weighs {y} pounds "
    "less than {b}'s. How much do the three dogs weigh together?",
    "{a} is {z} times as old as {b}, who is {p} years old. How old will {a} be when {b} is twice "
    "{b}'s current age?",
    "There are {x} red cars in a parking lot, {y} fewer blue cars than red cars, and as many white cars "
    "as red and blue cars together. How many cars are in the lot?",
    "{a} has {x} baseball cards. {a} gives {b} a third of them, and then {b} has {p}0 cards. How many "
    "cards did {b} have before?",
    "{a} and {b} have {x}0 pencils between them. {a} has {y}0 more pencils than {b}. How many pencils "
    "does each of them have?",
    "{a} baked {x} cookies. {b} baked {y} fewer cookies than {a}, and {c} baked twice as many as {b}. "
    "They put all the cookies into bags of {z}. How many bags do they fill?",
    "A school has {x}0 girls, and the number of boys is {y}0 more than the number of girls. Each "
    "classroom holds {slices} students. How many classrooms does the school need?",
    "The sum of {a}'s and {b}'s ages is {x}. {a} is {y} years older than {b}. How old will {b} be in "
    "{w} years?",
    "{a} ran {y} miles on Monday. Each day after that {a} ran {q} mile more than the day before, up to "
    "Friday. How many miles did {a} run from Monday to Friday?",
    "{a} has {z} times as many books as {b}. If {a} gives {b} {y} books, they have the same number. "
    "How many books does {a} have?",
    "A tree was {x} feet tall when {a} was born. It grew {q} feet a year, and {a} is now {t} years old. "
    "How tall is the tree now, and how much taller is it than when {a} was born?",
    "{a} is {y} years older than {b}, and {b} is {z} years older than {c}. {c} is {t} years old. What "
    "is the sum of the three ages?",
    "There are {x} students in {a}'s class. The number of students who walk to school is {y} more than "
    "the number who take the bus, and the rest, {w}, are driven. How many students take the bus?",
    "{a} has {p} fewer toy cars than {b}, and {b} has {x}. {c} has as many toy cars as {a} and {b} "
    "together, minus {y}. How many toy cars does {c} have?",
    "A jar holds {x} blue beads and {z} times as many red beads. {a} takes out {y} beads of each color. "
    "How many beads are left in the jar?",
    "{a} scored {x} points in a game. {b} scored half as many points as {a}, plus {y}. {c} scored {q} "
    "points fewer than {b}. What was the team's total?",
    "Four years ago {a} was {x} years old. {b} is {y} years younger than {a} is now. How old will {b} "
    "be in {w} years?",
    "{a} saved ${x}0. {b} saved {pct}% more than {a}, and {c} saved ${p} less than {b}. How much did "
    "the three save altogether?",
    "A shelf has {x} jars of jam. There are {y} more jars of honey than jam and twice as many jars of "
    "pickles as honey. How many jars are on the shelf?",
    "{a} has {x} goldfish and {b} has {y} more. {a} buys {z} more goldfish and {b} gives {q} away. "
    "Who has more goldfish now, and how many more?",
    "{a} is {t} years old, and {a}'s mother is {w} years more than {z} times {a}'s age. How old was "
    "the mother when {a} was born?",
    "A bus has {x} passengers. At the first stop, {y} get off and twice as many get on. At the second "
    "stop, half of the passengers get off. How many passengers are left on the bus?",
    "{a} has three times as many crayons as {b}, and {b} has {y} more crayons than {c}. {c} has {p} "
    "crayons. How many crayons do they have in total?",
    "{a} picked {x} apples. {b} picked {z} times as many as {a}, and {c} picked {y} fewer than {b}. "
    "Each pie needs {w} apples. How many whole pies can they bake?",
    "The combined weight of {a}'s two suitcases is {x} kilograms. One suitcase weighs {y} kilograms "
    "more than the other. How heavy is the lighter suitcase?",
    "{a} is twice as old as {b}, and {c} is {y} years older than {a}. If {b} is {p} years old, how "
    "many years older is {c} than {b}?",
    "A toy store has {x} dolls and {z} times as many toy trucks. After a sale it has {y} dolls and {w} "
    "trucks left. How many toys did the store sell?",
    "{a} swam {x} laps. {b} swam {y} laps more than {a}, and {c} swam as many laps as {a} and {b} "
    "together, divided by {q}. How many laps did {c} swim?",
    "There are {x} more adults than children at a picnic, and there are {p} children. Each adult eats "
    "{z} sandwiches and each child eats {q}. How many sandwiches are eaten?",
    "{a} has {x} dollars and {b} has {p} dollars. How much money must {a} give {b} so that they have "
    "the same amount?",
    "{a}'s brother is {y} years older than {a}, and their sister is {z} years younger than {a}. In "
    "{w} years their ages will add up to {x}0. How old is {a} now?",
    "A box holds {x} pens. A second box holds {y} fewer than the first, and a third holds twice as many "
    "as the second. {a} shares all the pens equally among {z} classrooms. How many pens does each "
    "classroom get?",
)
# fmt: on


def relation_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of quantities defined by each other (twice as many, a few fewer, ages now
    and later, a gift that evens two amounts), from ``_RELATION_STORY_TEMPLATES`` (no instruction
    appended)."""
    return _template_stories(_RELATION_STORY_TEMPLATES, count, seed + 197)


# Points, games and tallies (``score-problems``): goals and baskets worth different points, quiz and
# test scores with bonuses and penalties, league tables from wins, draws and losses, rounds of a game
# added up, a score needed to catch up or to reach a target; every slot is filled by :func:`_story_values`.
# fmt: off
_SCORE_STORY_TEMPLATES = (
    "In a basketball game, {a} made {x} two-point shots and {y} three-point shots, and scored {p} free "
    "throws worth one point each. How many points did {a} score?",
    "A football team gets 3 points for a win, 1 point for a draw and none for a loss. After {x} games "
    "the team has won {y} and drawn {z}. How many points does the team have?",
    "In a quiz, each right answer earns {z} points and each wrong answer loses {q} point. {a} answered "
    "{x} questions and got {y} of them wrong. What was {a}'s score?",
    "{a} scored {s1}, {s2} and {s3} on three tests. What score does {a} need on the fourth test to have "
    "an average of {avg}?",
    "In a dart game, the bullseye is worth 50 points and the outer ring {p} points. {a} hit the "
    "bullseye {y} times and the outer ring {x} times. How many points did {a} score?",
    "A spelling bee gives {z} points for each word spelled right and a bonus of {p} points for every "
    "{w} words in a row. {a} spelled {x} words right without a miss. How many points did {a} get?",
    "{a}'s team scored {x} points in the first half and {y} more in the second half than in the first. "
    "The other team scored {p}0 points in all. By how many points did {a}'s team win or lose?",
    "In a video game, a coin is worth {q} points, a gem {p} points and a star {x} points. {a} collected "
    "{w}0 coins, {y} gems and {z} stars. What was {a}'s score?",
    "A bowling game has 10 frames. {a} knocked down {t} pins in each of the first {w} frames and {y} "
    "pins in each of the other frames. How many pins did {a} knock down?",
    "{a} and {b} play a card game. {a} wins {x} rounds, which is {y} more than {b} wins, and {z} "
    "rounds are tied. How many rounds do they play?",
    "A soccer league gives 3 points for a win and 1 for a draw. {a}'s team won {y} games and drew {x}; "
    "{b}'s team won {x} games and drew {y}. Which team has more points, and how many more?",
    "In a math contest, easy problems are worth {q} points, medium problems {z} points and hard "
    "problems {p} points. {a} solved {w} easy, {h} medium and {y} hard problems. What was {a}'s total?",
    "{a} needs {x}0 points to reach the next level of a game. Each level {a} clears gives {p} points, "
    "and each bonus round {y} more. After {w} levels and {z} bonus rounds, how many points are still "
    "needed?",
    "A hockey team scored {x}0 goals over {t} seasons. {a} scored {y} goals a season and {b} scored {z} "
    "times as many as {a}. How many of the goals did the other players score?",
    "{a} scored {x} points in a game, {b} scored {z} times as many, and {c} scored {y} fewer than {b}. "
    "How many points did the three score together?",
    "A trivia night has {w} rounds of {t} questions. Each right answer is worth {q} points. {a}'s team "
    "got {y} questions wrong in all. How many points did the team score?",
    "In archery, the center ring is worth {t} points, the next ring {w} points and the outer ring {q} "
    "point. {a} shot {x} arrows: {y} hit the center, {z} hit the next ring and the rest hit the outer "
    "ring. What was {a}'s score?",
    "{a} has a high score of {x}0 in a game. On the first try {a} scores {p}0 points and on the second "
    "try {y}0 more than on the first. By how much did {a} beat or miss the high score on the second "
    "try?",
    "A rugby try is worth 5 points and a kick after it 2 points. {a}'s team scored {y} tries and "
    "kicked after {z} of them. How many points did the team score?",
    "A teacher gives {z} stars for each finished worksheet and takes away {q} star for each late one. "
    "{a} finished {x} worksheets, {y} of them late. How many stars does {a} have?",
    "{a}'s team won {x} games and lost {y} games. The team wants to win {pct}% of all its games "
    "this season. If the season has {p} more games, how many of them must the team win?",
    "In a board game, {a} moves {y} spaces each turn and {b} moves {z} spaces each turn. After {w} "
    "turns each, how many spaces ahead of the other is the faster player?",
    "A charity run gives {p} points for each lap and a bonus of {x} points for finishing. {a} ran {t} "
    "laps and finished; {b} ran {w} laps and did not finish. How many more points did {a} get than {b}?",
    "{a} scored {s1} points on the first round of a game and {s2} on the second round. The winner is "
    "the first to reach {avg}0 points. How many points does {a} still need?",
    "A hockey player's score counts a goal as 2 points and an assist as 1 point. {a} had {x} goals and "
    "{y} assists, and {b} had {p} goals and {z} times as many assists as {a}. Who has more points, and "
    "by how much?",
    "A school's house points: {a}'s house earned {x} points in September, {y}0 in October and twice "
    "the September points in November. How many points did the house earn in those three months?",
    "In a tennis match {a} won {w} sets and {b} won {q}. {a} won {t} games in each set {a} won and {y} "
    "games in each set {a} lost. How many games did {a} win in the match?",
    "{a} plays a game where each level is worth {y} more points than the level before. The first level "
    "is worth {p} points. How many points are the first {w} levels worth together?",
    "A chess club gives 1 point for a win and half a point for a draw. {a} played {x} games, won {y} "
    "and drew {z}. How many points did {a} score, and how many games did {a} lose?",
    "{a} scores {x}0 points in a game, {b} scores {pct}% more than {a}, and {c} scores {p} points less "
    "than {b}. What is the team's total score?",
    "In a relay race, the winning team gets {p} points, the second team {y} points and the third team "
    "{q} points. {a}'s school won {w} races, came second in {z} and third in {h}. How many points did "
    "the school get?",
    "{a} is playing a game with {b}. {a} is ahead by {x} points, and then {b} scores {y} points a turn "
    "for {w} turns while {a} scores {q} a turn. Who is ahead after those turns, and by how much?",
    "A quiz has {x} questions worth {z} points each. {a} scored {pct}% of the possible points. How many "
    "questions did {a} answer correctly?",
    "{a}'s bowling scores this week were {s1}, {s2} and {s3}. {b}'s scores were {y} points higher each "
    "time. What was {b}'s average score?",
    "In a basketball season {a} scored {x} points a game for {t} games and {y} more points a game for "
    "the next {w} games. How many points did {a} score that season?",
    "A game show gives ${p}00 for each right answer and takes away ${q}00 for each wrong one. {a} gave "
    "{x} answers and {y} of them were wrong. How much money did {a} win?",
    "{a}'s class earns a marble in a jar for each day of good behavior and loses {q} for a bad day. "
    "The class gets a party at {x}0 marbles. After {t} good days and {z} bad days, how many marbles "
    "are still needed?",
    "In a ping-pong tournament every player plays every other player once. There are {w} players. "
    "How many games are played, and how many does each player play?",
    "In a reading challenge {a} read {x} books and earned {p} points for each book. {b} read {y} more "
    "books than {a}. How many points did {b} earn?",
    "{a} and {b} play darts, counting down from 301 points. {a} has scored {x} points a turn for {q} "
    "turns. How many points does {a} still need to reach zero?",
)
# fmt: on


def score_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of points, games and tallies (goals and baskets worth different points,
    quiz scores with penalties, league points, a score still needed), from ``_SCORE_STORY_TEMPLATES``
    (no instruction appended)."""
    return _template_stories(_SCORE_STORY_TEMPLATES, count, seed + 211)


# Farms, gardens and animals (``farm-problems``): animals' legs, eggs, milk, wool and honey, feed and
# hay, rows of plants and trees, harvests sold at a market, flocks and herds that grow or shrink;
# every slot is filled by :func:`_story_values`.
# fmt: off
_FARM_STORY_TEMPLATES = (
    "A farmer has {x} chickens and {y} cows. How many legs do the farmer's animals have in all?",
    "{a}'s farm has {x} sheep. Each sheep gives {z} kilograms of wool a year, and wool sells for ${p} a "
    "kilogram. How much does {a} earn from the wool in {y} years?",
    "A dairy farm has {x} cows. Each cow gives {y} gallons of milk a day, and the farm sells the milk "
    "for ${z} a gallon. How much does the farm earn from milk in a week?",
    "{a} feeds each of {x} goats {z} pounds of hay a day. A bale of hay weighs {m} pounds. How many bales "
    "does {a} need for {w} days, counting a bale that is only partly used as a whole one?",
    "A barn has {x} horses. Each horse eats {y} apples and {z} carrots a day. How many apples and "
    "carrots together do the horses eat in {w} days?",
    "{a} planted {x} tomato plants. Each plant gave {y} tomatoes, but birds ate {pct}% of the tomatoes. "
    "How many tomatoes were left for {a}?",
    "A farmer has {x}00 meters of fence. The farmer uses {y}0 meters for a pig pen and {z}0 meters for "
    "a chicken run. How many meters of fence are left?",
    "{a} collects {y} eggs every morning and {z} eggs every evening, and uses {q} eggs a day for "
    "breakfast. How many eggs does {a} have left to sell after {w} weeks?",
    "There are {x} ducks on a pond. Then {y} more land on it and {z} fly away. Each duck on the pond "
    "eats {q} cups of grain a day. How many cups of grain do the ducks eat in {w} days?",
    "{a}'s vegetable garden has {y} rows of carrots and {z} rows of beans. Each row of carrots has {x} "
    "plants and each row of beans has {p} plants. How many plants are in the garden?",
    "An orchard has {y} rows of {x} apple trees. Each tree gives {z} bushels of apples, and a bushel "
    "sells for ${p}. How much are all the orchard's apples worth?",
    "A farmer sells {x}0 pumpkins on Saturday for ${z} each, and on Sunday {y} fewer pumpkins for ${q} "
    "more each. How much money does the farmer make over the weekend?",
    "{a} keeps {w} beehives. Each hive makes {y} pounds of honey a season. {a} keeps {z} pounds for the "
    "family and sells the rest in one-pound jars for ${p} a jar. How much does {a} make from honey?",
    "A farm has {x} chickens, {w} times as many ducks as chickens, and {y} fewer geese than ducks. How "
    "many birds are on the farm?",
    "{a} buys {y} bags of chicken feed for ${z} each and {q} bags of corn for ${w} each. {a} had ${x}00 "
    "before going to the feed store. How much money does {a} have left?",
    "A pig weighs {x}0 pounds in spring and gains {y} pounds a week for {t} weeks. The farmer then sells "
    "the pig for ${z} a pound. How much does the pig sell for?",
    "{a} waters a garden with a can that holds {z} liters. Each of the {x} plants needs half a liter a "
    "day. How many times a day must {a} fill the can?",
    "A sheepdog herds {z}0 sheep into each of {w} pens. Then {y} sheep from each pen are sold at the "
    "market. How many sheep are left in the pens?",
    "{a} has {x} rabbits. Each month the number of rabbits doubles, and at the end of each month {a} "
    "gives away {y} rabbits. How many rabbits does {a} have after {z} months?",
    "A wheat field is {x}0 meters long and {y}0 meters wide. The farmer gets {z} kilograms of wheat from "
    "every 10 square meters. How many kilograms of wheat does the field give?",
    "{a} milks {w} goats twice a day, and each goat gives {q} liters at each milking. It takes {t} liters "
    "of milk to make a kilogram of cheese. How many kilograms of cheese can {a} make in {z} weeks?",
    "A chicken coop holds {x} hens. {a} builds {z} more coops of the same size and fills them all, then "
    "sells {y} hens. How many hens does {a} have now?",
    "{a} grows strawberries. On the first day {a} picks {x} strawberries, and each day after that {y} "
    "more than the day before. How many strawberries does {a} pick in {w} days?",
    "A farmer pays a helper ${p} an hour. The helper works {h} hours a day for {w} days to bring in the "
    "hay, and the hay sells for ${x}0 more than the helper's pay. How much does the hay sell for?",
    "{a} has {x} cows and {b} has {y} more cows than {a}. {c} has twice as many cows as {a} and {b} "
    "together. How many cows do the three of them have?",
    "A stable has {w} horses for rides. Each ride lasts {m} minutes and costs ${p}, and each horse gives "
    "{y} rides a day. How much does the stable earn in {z} days?",
    "{a} plants {x} sunflower seeds. {pct}% of them do not sprout, and each flower that grows gives {y}0 "
    "seeds. How many seeds does {a} get from the flowers?",
    "A farm stand sells eggs for ${z} a dozen and honey for ${p} a jar. On Saturday it sold {x} dozen "
    "eggs and {y} jars of honey; on Sunday it sold half as many dozen eggs and {q} more jars of honey. "
    "How much did the stand take in over the two days?",
    "{a}'s farm has {t}00 acres. {a} plants corn on a third of the land and soybeans on a quarter of it, "
    "and the rest is pasture for the cows. How many acres are pasture?",
    "A truck carries {w}0 bales of straw on each trip. The farm needs {x}00 bales for the winter and has "
    "already moved {y}0. How many more trips does the truck need to make?",
    "{a} raises {x} ducks, and each duck lays {z} eggs a week. About {y} of the eggs break each week, and "
    "a duck egg sells for ${q}. How much money does {a} make from duck eggs in {w} weeks?",
    "A goat eats {q} kilograms of grass a day, and a cow eats {z} times as much as a goat. How many "
    "kilograms of grass do {w} goats and {y} cows eat in a week?",
    "In a flower garden, {a} planted {x}0 tulips, {b} planted {y} fewer tulips than {a}, and {c} planted "
    "twice as many as {b}. How many tulips did they plant in all?",
    "{a} has a flock of {x}0 sheep. In spring {y} lambs are born for every 10 sheep, and {a} sells {q}0 "
    "of the older sheep. How many sheep are in the flock now?",
    "A farm pond has {x}0 fish. A heron eats {z} fish a day, and each week {y} new fish hatch. How many "
    "fish are in the pond after {w} weeks?",
    "{a} picks {x} baskets of peaches with {y}0 peaches in each. {a} gives {pct}% of the peaches to the "
    "neighbors and makes jam from the rest, {z} peaches for each jar. How many jars of jam can {a} make?",
    "A tractor uses {z} liters of fuel for every hour of plowing. Each field takes {h} hours to plow, the "
    "farmer has {y} fields, and fuel costs ${q} a liter. How much does the fuel for plowing cost?",
    "{a} fences a square pen whose sides are {x} meters long, with a post every 2 meters along the "
    "fence. How many posts does {a} need?",
    "{a}'s farm earns ${x}00 a month from milk and ${y}00 a month from eggs. Feed costs ${z}0 a month and "
    "the helper's pay is ${q}00 a month. How much does the farm make in a year?",
    "At the market {a} sells {x} liters of milk for ${q} a liter, {y} dozen eggs for ${z} a dozen and {w} "
    "rounds of cheese for ${p} each. How much money does {a} take home from the market?",
)
# fmt: on


def farm_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of farms, gardens and animals (legs, eggs, milk, wool and honey, feed, rows
    of plants, harvests sold, flocks that grow or shrink), from ``_FARM_STORY_TEMPLATES`` (no
    instruction appended)."""
    return _template_stories(_FARM_STORY_TEMPLATES, count, seed + 227)


# Pay and savings (``pay-problems``): hourly wages, overtime past 40 hours, commissions, tips, piece
# rates, two jobs, raises, taxes taken out, allowances and chores, savings towards a goal, earnings
# split by hours worked; every slot is filled by :func:`_story_values`.
# fmt: off
_PAY_STORY_TEMPLATES = (
    "{a} earns ${p} an hour and works {h} hours a day, {w} days a week. How much does {a} earn in {z} "
    "weeks?",
    "{a} is paid ${p} an hour for the first 40 hours of a week and one and a half times that for every "
    "hour after 40. {a} worked {hours} hours this week. How much did {a} earn?",
    "{a} gets an allowance of ${y} a week and spends ${q} of it on snacks. How many weeks must {a} save "
    "to buy a game that costs ${x}?",
    "A salesperson earns ${x}0 a week plus {pct}% of every sale. This week {a} sold ${y}00 worth of "
    "shoes. How much did {a} earn this week?",
    "{a} walks dogs for ${p} an hour and mows lawns for ${x} a lawn. Last month {a} walked dogs for {t} "
    "hours and mowed {y} lawns. How much did {a} earn last month?",
    "{a} makes ${x}0 a day at a cafe and gets about ${y} in tips for each hour of a {h}-hour shift. How "
    "much does {a} take home from {w} shifts?",
    "{a}'s pay is ${x}00 a month. After a {pct}% raise, how much will {a} earn in a year?",
    "{a} already has ${x}0 saved and adds ${z}0 every month. {b} has nothing saved but adds ${y}0 every "
    "month. How much will they have saved together after {w} months?",
    "{a} works at a bakery for ${p} an hour, and {pct}% of each paycheck goes to taxes. If {a} works {h} "
    "hours a day for {w} days, how much does {a} take home?",
    "A delivery driver is paid ${q} for each package and ${z} for each mile driven. On Monday {a} "
    "delivered {x} packages and drove {y}0 miles. How much did {a} earn on Monday?",
    "{a} wants to buy a bike that costs ${x}0. {a} has ${y}0 and earns ${p} each week walking dogs. How "
    "many weeks will it take {a} to afford the bike?",
    "{a} and {b} painted a fence together and were paid ${x}0. {a} worked {h} hours and {b} worked {w} "
    "hours, and they split the money by the hours they worked. How much did {a} get?",
    "{a} tutors math for ${x} an hour. Each week {a} has {y} students, and each student has a {m}-minute "
    "lesson. How much does {a} earn in {z} weeks?",
    "A factory worker is paid ${q} for every box packed. {a} packs {x} boxes an hour and works {h} hours "
    "a day. How much does {a} earn in a {w}-day week?",
    "{a} earns ${x}00 a month, spends a third of it on rent and ${y}0 on food, and saves the rest. How "
    "much does {a} save in {w} months?",
    "{a} sells lemonade for ${q} a cup. The lemons and sugar for each pitcher cost ${z}, and each pitcher "
    "fills {t} cups. If {a} sells {w} pitchers of lemonade, how much profit does {a} make?",
    "{a} gets paid every two weeks, ${x}0 for every day worked, and works {w} days each week. How much "
    "is one paycheck?",
    "{a} works two jobs. At the store {a} makes ${p} an hour for {h} hours a week, and at the library "
    "${y} an hour for {t} hours a week. How much does {a} earn in {z} weeks?",
    "{a}'s old job paid ${p} an hour for {h} hours a day. The new job pays ${q} more an hour for the same "
    "hours. How much more does {a} earn in {t} workdays at the new job?",
    "A waiter earns ${z} an hour plus tips. On Friday {a} worked {h} hours and served {y} tables, and "
    "each table left a ${w} tip. How much did {a} make on Friday?",
    "{a}'s grandmother gives {a} ${y} on every birthday, and {a}'s uncle gives twice as much. {a} puts "
    "all of it in a piggy bank. How much is in the bank after {a}'s birthdays from age {z} to age {t}?",
    "{a} charges ${x} to wash a car and ${y} more to clean the inside as well. On Saturday {a} washed "
    "{t} cars, and {z} of them also had the inside cleaned. How much did {a} earn?",
    "A company pays each of its {y} workers ${x}0 a day. The job takes {w} days, and at the end every "
    "worker gets a bonus of ${p}0. How much does the company pay in all?",
    "{a} earns ${p} an hour and works from 9 a.m. to {z} p.m. with a {m}-minute unpaid lunch break. How "
    "much does {a} earn in one day?",
    "{a} puts ${x}0 in a savings account that pays {q}% interest at the end of each year. How much is "
    "in the account after 2 years?",
    "{a} is saving for a ${x}0 concert ticket. {a} earns ${p} each Saturday and ${q} each Sunday doing "
    "chores. How many weekends until {a} can buy the ticket?",
    "{a} is paid ${x} for each article written. Last month {a} wrote {y} articles a week for {w} weeks "
    "and got a bonus of ${z}0 for the month. How much did {a} earn last month?",
    "{a} earns ${p} an hour at a car wash and works {h} hours every Saturday and {w} hours every Sunday. "
    "How many weeks must {a} work to earn at least ${x}00?",
    "A team of {y} workers shares a bonus of ${x}00 equally, and each worker also gets ${z}0 for every "
    "year worked. {a} has worked {w} years. How much does {a} get?",
    "{a}'s weekly pay is ${x}0. {a} gives {pct}% of it to the household and spends ${q}0 on bus fare. "
    "How much is left each week?",
    "{a} watches {b}'s children for ${p} an hour. {a} arrives at {z} p.m., stays until {t} p.m. and gets "
    "a ${q} tip. How much does {a} make?",
    "{a} sells handmade bracelets for ${p} each. The beads for each bracelet cost ${q}, and the stall at "
    "the fair costs ${x}. How much profit does {a} make by selling {y}0 bracelets?",
    "{a} earns ${x}0 a week and saves half of it. {b} earns ${y}0 more a week than {a} and saves a "
    "quarter of it. Who saves more in a week, and by how much?",
    "{a} gets a ${x}0 signing bonus and ${p}0 a day for a {w}-week summer job, working {z} days each "
    "week. How much does {a} earn over the summer?",
    "{a} picks apples for ${q} a bucket, and each bucket takes {m} minutes to fill. How much does {a} "
    "earn in a {h}-hour day?",
    "{a} gets ${y} for each chore on the family list. This week there are {t} chores, and {a} does all "
    "but {z} of them. How much does {a} earn in {w} weeks like this one?",
    "For every $10 {a} saves, {a}'s employer adds ${z}. {a} saves ${x}0 a month. How much goes into the "
    "account in {w} months?",
    "{a} mows {y} lawns a week for ${x} each and pays ${q} a week for gas for the mower. How much money "
    "does {a} have after {t} weeks?",
    "{a} starts a new job at ${x}00 a month and gets a raise of ${y}0 a month after every {z} months. How "
    "much will {a} earn in the first year?",
    "{a}, {b} and {c} run a car wash. {a} washed {x} cars, {b} washed {y} more than {a}, and {c} washed "
    "half as many as {b}. At ${z} a car, how much did they earn together?",
)
# fmt: on


def pay_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of pay and savings (hourly wages and overtime, commissions, tips, piece
    rates, raises, taxes, allowances, savings towards a goal), from ``_PAY_STORY_TEMPLATES`` (no
    instruction appended)."""
    return _template_stories(_PAY_STORY_TEMPLATES, count, seed + 233)


# School days (``school-problems``): classes and students, buses for a field trip, supplies bought in
# packs, lunches and snacks, library books, reading logs, grades and attendance, rooms and desks,
# fundraisers and bake sales; every slot is filled by :func:`_story_values`.
# fmt: off
_SCHOOL_STORY_TEMPLATES = (
    "A school has {w} classes in each grade and {x} students in each class. How many students are in "
    "{z} grades?",
    "{y}0 students and {h} teachers are going on a field trip. Each bus holds {x} people. How many "
    "buses does the school need?",
    "{a} needs {w} notebooks and {y} pencils for the new school year. Notebooks cost ${q} each and "
    "pencils come in packs of {z} for ${p}. How much does {a} spend if {a} buys whole packs?",
    "The school library has {x}0 books. This week students borrowed {y}0 of them and returned {z}0 "
    "books from last week. How many books are on the shelves now if {w}0 were out last week?",
    "{a} reads {m} minutes every school night, Monday to Thursday, and twice as long on Friday. How "
    "many minutes does {a} read in {w} school weeks?",
    "A classroom has {w} rows of desks with {y} desks in each row. {z} desks are empty today. How many "
    "students are in class today?",
    "The art teacher has {x} jars of paint and uses {q} jars for each class. There are {w} art classes "
    "a week. For how many whole weeks will the paint last?",
    "{a} scored {s1}, {s2} and {s3} on three spelling tests. What score does {a} need on the fourth "
    "test to have an average of {avg}?",
    "The school cafeteria sells lunches for ${q} and milk for {z}0 cents. On Monday it sold {x}0 "
    "lunches and {y}0 cartons of milk. How much money did it take in?",
    "{a}'s class is raising money for a trip that costs ${x}00. They have raised ${y}0 so far, and "
    "each of the {t} families gives ${p}0 more. How much more do they need?",
    "There are {x} students in {a}'s class, and {pct}% of them walk to school. The rest ride the bus. "
    "How many ride the bus?",
    "A teacher buys {w} boxes of crayons with {y}0 crayons in each box and shares them equally among "
    "{z} tables. How many crayons does each table get?",
    "The school day starts at 8 a.m. and has {h} lessons of {m} minutes each, a 45-minute lunch and "
    "two breaks of {p} minutes. At what time does the school day end?",
    "{a} has {w} subjects and {z} pages of homework in each subject every night. How many pages of "
    "homework does {a} do in {y} school days?",
    "The school choir has {x} singers. {y} more joined this term and {z} left. If the singers stand in "
    "rows of {w}, how many full rows are there?",
    "A bake sale sold {x} cupcakes at ${q} each and {y}0 cookies at {z}0 cents each. The ingredients "
    "cost ${w}0. How much profit did the class make?",
    "The gym has {t} basketballs, and each class of {x} students plays in teams of {z}. How many teams "
    "are there in one class, and how many balls are left over if each team uses one ball?",
    "{a} earned {s1} points out of 100 on a test, and {b} earned {y} points more than {a}. {c} earned "
    "{z} points fewer than {b}. What was the average of their scores?",
    "A school orders {w} pizzas for a class party, each cut into {slices} slices. There are {x} "
    "students, and each eats {z} slices. How many slices are left?",
    "{a} was absent {z} days out of the {t}0 days of the term. What percent of the days was {a} at "
    "school?",
    "The school's {h} classrooms each need {w} new chairs. Chairs cost ${x} each, and the school gets "
    "a discount of {pct}% for buying them all at once. How much does the school pay?",
    "{a} walks {z} blocks to school, and each block takes {q} minutes. School starts at 8:30 a.m. At "
    "what time must {a} leave home to arrive {m} minutes early?",
    "In a school of {x}00 students, a quarter are in the first grade, {y}0 are in the second grade and "
    "the rest are in the third grade. How many are in the third grade?",
    "{a}'s teacher hands out {z} stickers for every book a student reads. {a} read {y} books in "
    "September and twice as many in October. How many stickers did {a} get?",
    "The science fair has {t} tables with {w} projects on each. Each judge looks at {y} projects an "
    "hour. How many hours do {z} judges need to see every project?",
    "A teacher grades {y} tests an hour. There are {w} classes of {x} students. How many hours does "
    "grading take?",
    "The school garden has {w} beds with {x} plants in each. The students water {pct}% of the plants "
    "each morning. How many plants are watered each morning?",
    "{a} packs a lunch of a ${q} sandwich, a ${z} juice and an apple that costs half as much as the "
    "juice. How much does {a} spend on lunches in a {w}-week term of five school days a week?",
    "The school's {y} buses each make {z} trips every morning with {x} students on each trip. How "
    "many students ride the bus each morning?",
    "{a} needs {t}0 hours of volunteering to graduate. {a} volunteers {h} hours every Saturday. How "
    "many Saturdays will it take?",
    "A classroom library has {x} picture books and {y} times as many chapter books. {a} and {b} each "
    "borrow {z} books. How many books are left in the classroom library?",
    "The school play sold {x}0 adult tickets for ${p} each and {y}0 student tickets for ${q} each. "
    "How much did the play earn?",
    "{a} practices spelling words: {y} new words on Monday and {z} more each day than the day before "
    "until Friday. How many words does {a} practice that week?",
    "There are {t} teams at the school's sports day, each with {x} students. Every student gets {z} "
    "tickets for snacks. How many tickets are handed out?",
    "A school buys {x}0 tablets for ${p}0 each and spends {pct}% more on cases and chargers. What is "
    "the total cost?",
    "{a}'s class of {x} students voted for a class pet: {y} chose a fish, {z} times as many chose a "
    "hamster, and the rest chose a rabbit. How many chose a rabbit?",
    "The school nurse has {x}0 bandages and uses about {y} a day. After {w} days a box of {z}0 more "
    "arrives. How many bandages does the nurse have then?",
    "{a} earns {q} gold stars for each perfect homework and loses one for each missing one. This month "
    "{a} had {t} perfect homeworks and {z} missing ones. How many stars does {a} have?",
    "The school's {w} fifth-grade classes each collect {x} cans for a food drive, and the {z} "
    "sixth-grade classes each collect {y} more cans than a fifth-grade class. How many cans in all?",
    "A teacher has {x}0 sheets of paper and gives each of the {t} students in a group {y} sheets. How "
    "many groups of {t} can get paper before it runs out?",
)
# fmt: on


def school_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of school days (classes and students, buses for a trip, supplies in packs,
    lunches, library books, grades and attendance, fundraisers), from ``_SCHOOL_STORY_TEMPLATES`` (no
    instruction appended)."""
    return _template_stories(_SCHOOL_STORY_TEMPLATES, count, seed + 239)


# Trips and travel (``trip-problems``): road trips in legs, fuel and mileage, hotel nights, tickets
# for families, luggage limits, car rentals by the day and the mile, tolls, souvenirs, exchange
# rates, timetables and time zones, campsites and park fees; every slot is filled by
# :func:`_story_values`.
# fmt: off
_TRIP_STORY_TEMPLATES = (
    "{a}'s family drives {x}0 miles to the beach. Their car goes {t}0 miles on one tank, and a tank "
    "costs ${p}0. How much does the fuel for the trip there and back cost?",
    "A hotel charges ${x}0 a night for a room and ${p} a night for breakfast for each person. {a} and "
    "{b} stay {w} nights and both eat breakfast. How much is the hotel bill?",
    "Train tickets cost ${x} for adults and half as much for children. A family of {z} adults and {y} "
    "children goes on a day trip. How much do the tickets cost?",
    "{a}'s suitcase may weigh at most {hours} pounds. It weighs {t} pounds empty, and {a} packs {y} "
    "shirts of half a pound each and {z} pairs of shoes of {q} pounds each. How many more pounds can "
    "{a} pack?",
    "A rental car costs ${t}0 a day plus {z}0 cents for every mile. {a} rents it for {w} days and "
    "drives {x}0 miles. How much does {a} pay?",
    "On a road trip {a} drove {x}0 miles on the first day, {y}0 miles on the second day and half as "
    "far as the first two days together on the third day. How many miles did {a} drive?",
    "{a} has ${x}0 to spend on souvenirs. {a} buys {y} postcards for $1 each and {z} magnets for "
    "${q} each. How much money is left?",
    "{a} changes ${x}0 into pesos at {t} pesos to the dollar, after paying a ${q} fee out of the "
    "dollars. How many pesos does {a} get?",
    "A bus leaves at 7:{m} a.m. and the trip takes {h} hours and {y}0 minutes. At what time does the "
    "bus arrive?",
    "It is 9 a.m. in {a}'s city. {b} lives {z} hours ahead. {a} wants to call {b} at {t} p.m. {b}'s "
    "time. How many hours must {a} wait?",
    "A campsite costs ${p}0 a night for a tent and ${q} a night for each person. {w} friends share "
    "{z} tents for {y} nights. How much do they pay altogether?",
    "A national park charges ${x} for each car and ${q} for each person inside. {w} cars with {z} "
    "people each enter the park. How much does the park collect?",
    "{a} flies {x}00 miles in {h} hours, then drives {y}0 miles at {t}0 miles an hour. How many hours "
    "does the whole journey take?",
    "On a map, 1 inch stands for {y}0 miles. Two towns are {z} and a half inches apart on the map. "
    "How many miles apart are they?",
    "A cruise costs ${x}00 for each person and has a discount of {pct}% for children. {a} books it "
    "for {z} adults and {w} children. How much does {a} pay?",
    "{a}'s car uses one gallon for every {t}0 miles. Gas costs ${q} a gallon. How much does gas cost "
    "for a {x}0-mile drive, rounded up to whole gallons?",
    "A tour group of {x} people takes vans that seat {w} each. How many vans does the group need, "
    "and how many empty seats are there?",
    "{a} walks {y} miles a day on a hiking trip of {t} days, and rests on {z} of those days. How many "
    "miles does {a} walk?",
    "A toll road charges ${q} at each of {w} toll booths. {a} drives it to work and back {z} days a "
    "week. How much does {a} pay in tolls each week?",
    "Plane tickets cost ${x}0 each, and each checked bag costs ${p}0 more. {a}'s family of {z} flies "
    "there and back with {w} bags each way. How much do they pay?",
    "{a} spends ${x} a day on food during a {t}-day trip, and {pct}% of that goes to coffee. How "
    "much does {a} spend on coffee?",
    "A ferry makes {h} trips a day and carries {x} cars on each trip. Each car pays ${p}. How much "
    "does the ferry earn in {w} days?",
    "{a} drives at {t}0 miles an hour for {h} hours and then at {y}0 miles an hour for {z} hours. "
    "What was {a}'s average speed?",
    "A hostel bed costs ${p} a night, and a private room ${x}0 a night. {w} friends stay {z} "
    "nights. How much do they save by taking beds instead of {w} private rooms?",
    "{a}'s road trip is {x}0 miles long. {a} drove {pct}% of it on Monday and {y}0 miles on Tuesday. "
    "How many miles are left?",
    "A theme park ticket costs ${x} and a fast pass costs ${p} more. {a} buys {z} tickets with fast "
    "passes and {w} without. How much does {a} spend?",
    "The train from {a}'s town stops at {t} stations, {m} minutes apart, and waits {q} minutes at "
    "each stop. How long is the ride from the first station to the last?",
    "{a} packs {w} outfits for a {t}-day trip and wears each one the same number of days, as far as "
    "possible. What is the greatest number of days any outfit is worn?",
    "A trip costs ${x}00 in all: flights are half of it, the hotel is ${y}0 less than the flights, and "
    "the rest is for food. How much is for food?",
    "Bikes rent for ${p} an hour or ${t}0 for the whole day. {a} and {b} each ride {h} hours. Which "
    "is cheaper for them, and by how much?",
    "{a} saves ${y}0 a week for a trip that costs ${x}00. {a} already has ${z}0. How many weeks will "
    "it take to save enough?",
    "A sightseeing boat holds {x} people. On a day with {t} tours it was full {z} times and {pct}% full "
    "the other times. How many people rode the boat?",
    "A family buys {w} sandwiches for ${q} each and {y} drinks for ${z} each at a rest stop, and pays "
    "with $100. How much change do they get?",
    "{a}'s flight leaves at {t}:{m} a.m. {a} must be at the airport two hours early, and the drive "
    "takes {y}0 minutes. At what time must {a} leave home?",
    "A road trip has {z} legs of {x}0 miles each. {a} stops for {m} minutes after every {y}0 miles. "
    "How many stops does {a} make?",
    "Snorkel gear rents for ${p} a day for each person. {a}'s group of {w} rents it for {z} days and "
    "gets {pct}% off. How much do they pay?",
    "{a} buys a {t}-day rail pass for ${x}0. Single tickets would cost ${p} a trip, and {a} takes {y} "
    "trips a day. Is the pass cheaper, and by how much?",
    "{a} uploads {x} photos a day of a {w}-day trip, and deletes {z} of them each evening. How many "
    "photos are left at the end of the trip?",
    "A travel guide plans {h} stops in a day, each {m} minutes long, with {y}0 minutes of travel "
    "between stops. How long is the day's tour in minutes?",
    "{a} drives {x}0 miles to a lake and {b} drives {pct}% farther to the same lake. {c} drives {z} "
    "miles less than {b}. How many miles do the three drive in all?",
)
# fmt: on


def trip_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of trips and travel (road trips, fuel and mileage, hotels, tickets,
    luggage, car rentals, tolls, exchange rates, timetables and time zones), from
    ``_TRIP_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_TRIP_STORY_TEMPLATES, count, seed + 257)


# Cooking and baking (``kitchen-problems``): recipes scaled up or down for more or fewer servings,
# batches of cookies and muffins on trays, oven and cooking times per kilogram or per batch,
# ingredients bought in packs or by weight, servings per pot, pie or cake, a café's or bakery's
# orders and sales, leftovers, cups, grams and spoons, a dinner party's shopping; every slot is
# filled by :func:`_story_values`.
# fmt: off
_KITCHEN_STORY_TEMPLATES = (
    "{a}'s pancake recipe feeds {w} people with {z} eggs and {y}00 milliliters of milk. {a} is cooking "
    "brunch for {h} times as many people. How many eggs and how many milliliters of milk does {a} need?",
    "{a} has enough dough for {x}0 cookies. One baking tray holds {slices} cookies, and the oven bakes "
    "one tray at a time for {t} minutes. How many minutes of baking does {a} need for all the cookies?",
    "A roast needs {m} minutes in the oven for every kilogram, then rests for {y}0 minutes before "
    "carving. {a}'s roast weighs {z} kilograms. How many minutes pass from putting it in the oven to "
    "carving it?",
    "A batch of {slices} muffins uses {y}0 grams of butter, and butter is sold in 250-gram packs for "
    "${q} each. {a} bakes {w} batches for a family reunion. How much does {a} spend on butter, buying "
    "whole packs?",
    "One pot of {a}'s lentil soup fills {slices} bowls. {a}'s café sells {x}0 bowls of soup on a cold "
    "day. How many pots must the cook make, and how many bowls are left over?",
    "{a}'s café sold {x} lattes at ${z} each and {y}0 croissants at ${q} each on Saturday morning. The "
    "milk and coffee for each latte cost the café {m} cents. How much did the café take in after paying "
    "for the lattes' milk and coffee?",
    "There are 3 teaspoons in a tablespoon. {a}'s curry for {w} people calls for {y} tablespoons of "
    "spice mix, and {a} cooks {z} pots of it for a street festival. How many teaspoons of spice mix "
    "does {a} use?",
    "A cup of flour weighs about 120 grams. {a}'s bread recipe uses {z} cups of flour for each loaf, "
    "and {a} bakes {w} loaves from a {t}-kilogram sack. How many grams of flour are left in the sack?",
    "{a} is hosting dinner for {t} guests. Each guest gets {q} potatoes and {y}00 grams of fish. "
    "Potatoes cost {m} cents each and fish costs ${p} for every 100 grams. How much does the food for "
    "the guests cost?",
    "{a} cooked {x}0 dumplings for a party. {b} ate {y}, {c} ate {z} more than {b}, and {a} ate {w}. "
    "How many dumplings were left for the other guests?",
    "Each apple pie at {a}'s bakery is cut into {slices} pieces. The bakery sold {x} pieces in the "
    "morning and {y}0 in the afternoon. How many pies did it have to cut, and how many pieces of the "
    "last pie are left?",
    "A wedding cake has {z} layers, and each layer takes {y}0 grams of sugar and {q} eggs. {a} bakes "
    "{w} of these cakes this month. How many grams of sugar and how many eggs does {a} use?",
    "{a}'s oven fits {z} muffin tins at a time, each with {slices} cups, and every round bakes for {m} "
    "minutes. How many minutes of baking does it take to make {x}0 muffins?",
    "{a}'s café uses {y} liters of milk a day from Monday to Friday and {z} liters more each day on "
    "Saturday and Sunday. Milk costs ${q} a liter. How much does the café spend on milk in a week?",
    "A beef stew recipe for {slices} people calls for {x}00 grams of beef and {h}00 grams of carrots. "
    "{a} makes only a quarter of the recipe. How many grams of beef and carrots does {a} use together?",
    "{a}'s bakery bakes {slices}0 loaves each morning. It sells {pct}% of them by noon and {y} more in "
    "the afternoon, and gives the rest to a food bank. How many loaves go to the food bank?",
    "A cup holds 16 tablespoons. {a} stirs {y} tablespoons of yogurt into each smoothie and makes {w} "
    "smoothies a week. How many tablespoons of yogurt are left after one week in a tub that held {t} "
    "cups?",
    "{a} fries {x} pancakes in a pan that holds {z} at a time, and each round takes {h} minutes. How "
    "many minutes does {a} spend frying pancakes?",
    "The morning orders at {a}'s café were {x} cappuccinos, {y}0 teas and {w} hot chocolates. A "
    "cappuccino costs ${z}, a tea ${q} and a hot chocolate ${h}. How much did the morning's orders "
    "bring in?",
    "Cheese costs ${q} for every 100 grams at the deli counter. {a} buys {y}00 grams for a lasagna and "
    "{z}00 grams for a pizza. How much does {a} pay for the cheese?",
    "{a}'s bakery sells croissants for ${q} each, and each one costs {m} cents to make. It sold {x}0 "
    "croissants on Saturday and {y}0 on Sunday. How much profit did the croissants make over the "
    "weekend?",
    "{a} wants the lasagna on the table at {h}:{m} p.m. It takes {z}0 minutes to prepare, bakes for "
    "{y}0 minutes and rests for {q}0 minutes. At what time must {a} start preparing it?",
    "{a} mixes {z} kilograms of bread dough, keeps {y}00 grams aside for a pizza base and shapes the "
    "rest into rolls of {m}0 grams each. How many rolls can {a} shape, and how many grams of dough are "
    "left over?",
    "{a} is throwing a dinner party for {w} friends. Each of them and {a} will drink {z} glasses of "
    "juice, and one bottle fills {y} glasses. How many bottles should {a} buy?",
    "Each espresso at {a}'s café uses {slices} grams of coffee beans. The café makes {x}0 espressos a "
    "day, and beans come in 1-kilogram bags. How many bags does it use in {w} days?",
    "{a} cooks a pot of {t} liters of vegetable soup. Each bowl holds {y}00 milliliters. How many full "
    "bowls can {a} serve, and how many milliliters of soup are left?",
    "{a}'s café cuts each cheesecake into {slices} slices and bakes {w} cheesecakes. By closing time all "
    "but {y} slices have sold at ${z} each, and the next day the leftovers sell for half price. How "
    "much money do the cheesecakes bring in?",
    "{a}'s only measuring cup holds a third of a cup. A loaf of bread needs {z} cups of water, and {a} "
    "bakes {w} loaves. How many times must {a} fill the measuring cup?",
    "{a} cooks {z} kilograms of strawberries with half that weight of sugar, and the jam weighs as much "
    "as the two together. How many full {y}00-gram jars can {a} fill?",
    "{a} cooks rice for a party of {x} guests, {y}0 grams of dry rice for each guest. Rice comes in "
    "1-kilogram bags for ${q} each. How much does {a} spend on rice?",
    "{a}'s bakery got {w} orders for birthday cakes and {y} for wedding cakes this week. Decorating a "
    "birthday cake takes {h} hours and a wedding cake {z} times as long. How many hours of decorating "
    "is that?",
    "{a}'s deli makes {x} sandwiches for an office lunch, each with two slices of bread. A loaf of bread "
    "has {slices} slices. How many loaves does the deli open, and how many slices are left over?",
    "{a} puts a stew in the slow cooker at {t} a.m. On low it needs {h} hours; on high it needs half as "
    "long. If {a} uses the high setting, at what time is the stew ready?",
    "{a} makes cookie dough from {y}00 grams of flour, {z}00 grams of butter and {q}00 grams of sugar. "
    "Each cookie takes {m} grams of dough. How many whole cookies can {a} make?",
    "Each full breakfast at {a}'s café comes with {z} sausages, and sausages come in packs of {slices}. "
    "The café serves {x} full breakfasts a day. How many packs does it open in {w} days?",
    "{a}'s waffle iron makes {z} waffles every {h} minutes. {a} wants {y} waffles for each of {w} "
    "guests. How many minutes does the cooking take?",
    "{a}'s dinner party shopping list has {w} steaks at ${p} each, {y} bottles of juice at ${q} each and "
    "a ${x} cake. The shop takes {pct}% off the whole bill. How much does {a} pay?",
    "{a} had {y} lemons and bought {z} bags of 10 more. The lemon bars took {used} lemons, and each jug "
    "of lemonade takes 4. How many jugs of lemonade can {a} make with the rest?",
    "In a baking contest, {a}'s cake got {s1}, {s2} and {s3} points from three judges. {b}'s pie got "
    "{avg} points on average from the same judges. Who got more points in all, and how many more?",
    "{a}'s bakery gets an order for {hours} cupcakes. Cupcakes bake {slices} to a tray and are packed "
    "{w} to a box. How many trays must be baked, and how many boxes are needed?",
)
# fmt: on


def kitchen_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of cooking and baking (recipes scaled to more or fewer servings, batches
    on trays, oven times, ingredients in packs or by weight, servings per pot or cake, a café's or
    bakery's orders and sales, leftovers, kitchen measures), from ``_KITCHEN_STORY_TEMPLATES`` (no
    instruction appended)."""
    return _template_stories(_KITCHEN_STORY_TEMPLATES, count, seed + 269)


# GSM8K-shaped stories of gardens (``garden-problems``): beds planted in rows, seeds in packets and
# their germination, watering cans and hoses, bags of soil and compost by the liter, fences and
# edging around beds, harvests weighed and shared, a market stall's vegetables, plants in pots and
# trays, lawns mowed by the hour, hedges and trees growing, a community garden's plots and fees;
# every slot is filled by :func:`_story_values`.
# fmt: off
_GARDEN_STORY_TEMPLATES = (
    "{a} plants a vegetable bed with {w} rows of carrots and {h} rows of beets. Each row of carrots "
    "holds {x} seedlings and each row of beets {y} fewer. How many seedlings does {a} plant?",
    "A packet holds {x}0 lettuce seeds, and about {pct}% of them never sprout. {a} sows {z} packets. "
    "About how many lettuce plants come up?",
    "{a}'s watering can holds {y} liters. The tomato bed needs {x} liters every evening and the herb "
    "pots {z} liters. How many times must {a} fill the can each evening, counting a part-full last "
    "trip as one?",
    "A rectangular flower bed is {w} meters long and {z} meters wide. {a} puts wooden edging all the "
    "way around it, and edging costs ${q} per meter. How much does the edging cost?",
    "Potting soil comes in {y}0-liter bags for ${p} each. {a} is filling {x} pots that take {z} liters "
    "each. How many bags does {a} buy, and what do they cost?",
    "{a} picked {x} tomatoes on Monday, twice as many on Wednesday and {y} fewer than that on Friday. "
    "How many tomatoes did {a} pick in those three days?",
    "At the farmers' market, {a} sells bunches of radishes for ${q} and jars of pickled beans for "
    "${p}. On Saturday {a} sold {x} bunches and {y} jars. How much money did the stall take?",
    "A young apple tree is {z}0 centimeters tall and grows {y} centimeters every month in spring and "
    "summer. How tall is it after {t} months of growing?",
    "{a} mows lawns after school and charges ${p} for a small lawn and ${p} more for a large one. "
    "This week {a} mowed {w} small lawns and {z} large ones. How much did {a} earn?",
    "A community garden has {x}0 plots. {pct}% of them are rented for the whole year at ${m} each, and "
    "the rest stand empty. How much rent does the garden collect?",
    "{a} plants tulip bulbs {y} centimeters apart along a path {x}0 centimeters long, with a bulb at "
    "each end. How many bulbs does {a} need?",
    "A hose pours {y} liters of water a minute. {a} waters the vegetable patch for {m} minutes every "
    "day. How many liters does the patch get in {w} days?",
    "{a} splits {x}0 strawberry plants equally among {z} raised beds, then gives away {y} plants from "
    "each bed to {b}. How many plants are left in each bed?",
    "A bag of fertilizer feeds {slices} square meters of lawn. {a}'s lawn is {x} meters by {w} meters. "
    "How many bags does {a} need for one feeding?",
    "{a} bought {w} trays of pansies with {slices} plants in each tray. After planting the border, "
    "{y} plants were left. How many pansies went into the border?",
    "{a}'s pumpkin weighed {y} kilograms in August and gained {z} kilograms each week for {h} weeks "
    "before the fair. How heavy was it at the fair?",
    "A gardener trims hedges for ${x} an hour. The front hedge takes {z} hours and the back hedge "
    "{q} hours longer. What does the gardener charge for both hedges?",
    "{a} fills {w} compost bins. Each bin holds {y}0 liters, and a full bin shrinks to a quarter of "
    "its volume by spring. How many liters of compost does {a} have in spring?",
    "Seed potatoes cost ${q} a kilogram. {a} plants {z} kilograms and harvests {t} times as much. If "
    "{a} sells the harvest at ${q} a kilogram too, how much more money comes back than was spent?",
    "{a} and {b} share a garden. {a} waters it on {z} days a week and {b} on the other days. How many "
    "days does {b} water it over {w} weeks?",
    "A greenhouse holds {w} shelves, each with room for {x} seedling pots. {a} has already put {z} pots "
    "on each shelf. How many more pots can go into the greenhouse?",
    "{a} builds a fence around a square vegetable patch with sides of {t} meters and leaves a gate "
    "{z} meters wide. Fencing costs ${p} per meter. How much does the fence cost?",
    "Each sunflower plant gives about {x}0 seeds. {a} saves the seeds of {w} plants and plants "
    "{pct}% of them next year. How many seeds does {a} plant next year?",
    "{a}'s garden gave {x}0 kilograms of beans. {a} froze a quarter of them and gave {y} kilograms to "
    "{b}. How many kilograms were left to eat fresh?",
    "A rose bush costs ${p} and a lavender plant ${q}. {a} buys {z} rose bushes and {slices} lavender "
    "plants and pays with two $100 notes. How much change does {a} get?",
    "{a} spends {m} minutes weeding each bed, and the garden has {w} beds. If {a} starts at 9:00, at "
    "what time does {a} finish weeding all the beds?",
    "Rain filled {a}'s water barrel with {x}0 liters. {a} uses {y} liters a day on the vegetables. For "
    "how many whole days does the barrel last?",
    "{a} has {x}0 herb cuttings. {pct}% of them grow roots, and {a} pots each rooted cutting in a pot "
    "that costs {m} cents. How much do the pots cost?",
    "A row of corn is {x} meters long, and {a} plants one seed every {z}0 centimeters. How many seeds "
    "go into {w} rows?",
    "Mulch is sold by the bag, and one bag covers {z} square meters. {a}'s beds cover {x} square "
    "meters, and bags cost ${p} each. How much does {a} spend on mulch?",
    "{a} harvested {x} zucchinis this summer, {y} more than last summer. Last summer's harvest was "
    "{z} more than the summer before. How many zucchinis did {a} harvest over the three summers?",
    "A garden center sells seedlings at ${q} each, or a tray of {slices} for ${w} less than {slices} "
    "single ones. {a} needs {h} trays' worth of seedlings. What does {a} pay for them in trays?",
    "{a} mows the big lawn in {m} minutes and {b} mows it in twice that time. How many minutes does "
    "{b} spend mowing it {w} times?",
    "An orchard has {w} rows of {x} pear trees. Each tree gives {z} baskets of pears, and a basket "
    "sells for ${p}. How much are the pears worth?",
    "{a} waters the {y} hanging baskets with {z} cups each and the {w} window boxes with twice as "
    "much each. How many cups of water is that?",
    "A vine grows {z} centimeters a day. {a} measured it at {x} centimeters on a Monday. How many days "
    "later is it first taller than {x}0 centimeters, and on which day of the week does that fall?",
    "{a} divides a {x}0-meter garden path into {t} equal parts and lays gravel on {z} of them. How "
    "many meters of the path are covered in gravel?",
    "{a} grew {x} heads of cabbage and sold them in crates of {y}. Each full crate sold for ${p} and "
    "the cabbages that did not fill a crate sold for ${q} each. How much did {a} earn?",
    "A pond in {a}'s garden loses {y} liters a day in hot weather. It held {x}00 liters at the start "
    "of a {t}-day heat wave. How much water is left at the end if no rain falls?",
    "{a} started the season with {used} flower pots, broke two of them and bought {y} new ones. {a} "
    "puts {q} bulbs in every pot. How many bulbs does {a} need?",
)
# fmt: on


def garden_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of gardens (beds in rows, seeds and germination, watering, soil and
    compost, fences and edging, harvests, a market stall, pots and trays, lawns and hedges, a
    community garden's plots), from ``_GARDEN_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_GARDEN_STORY_TEMPLATES, count, seed + 277)


# GSM8K-shaped stories of crafts (``craft-problems``): knitting and crochet by rows, squares and balls
# of yarn, beads and bracelets, candles and soap, quilts and sewing by the meter, painting walls and
# canvases, woodwork cut from planks, pottery and its kiln, cards, scrapbooks and paper chains, a
# craft fair's sales and a class's supplies; every slot is filled by :func:`_story_values`.
# fmt: off
_CRAFT_STORY_TEMPLATES = (
    "{a} is knitting a scarf. Each row takes {y} minutes, and the scarf needs {x}0 rows. How many "
    "hours does {a} spend knitting the scarf?",
    "One ball of yarn makes {z} hats. {a} wants to knit {slices} hats for a charity sale, and a ball "
    "of yarn costs ${p}. How much does the yarn cost if {a} buys whole balls?",
    "{a} makes bracelets with {x} beads each. Beads come in bags of {y}00. How many bracelets can {a} "
    "make from {z} bags, and how many beads are left over?",
    "{a} made {x}0 candles for the craft fair and sold all but {y} of them at ${p} each. How much "
    "money did {a} take at the fair?",
    "A quilt is made of squares in {t} rows of {h}. {a} has sewn {z} rows so far. How many more "
    "squares must {a} sew to finish the quilt?",
    "{a} is painting a fence of {x} boards. One can of paint covers {y} boards. How many cans does {a} "
    "need, and what do they cost at ${p} a can?",
    "{a} cuts a plank {x}0 centimeters long into pieces {y} centimeters long. How many whole pieces "
    "does {a} get, and how many centimeters are left over?",
    "In a pottery class each of the {x} students makes {w} bowls, and {pct}% of the bowls crack in "
    "the kiln. About how many bowls come out whole?",
    "Each greeting card {a} makes uses {q} sheets of colored paper. Paper comes in packs of {slices} "
    "sheets. How many packs does {a} need to make {x} cards?",
    "{a} pours {x}00 grams of melted soap into molds that hold {y}0 grams each. How many whole bars of "
    "soap does {a} get?",
    "{a} earns ${p} for each mug {a} paints and ${q} more for each plate. This month {a} painted {w} "
    "mugs and {h} plates. How much did {a} earn?",
    "A skirt pattern needs {z} meters of fabric and a dress pattern {q} meters more. Fabric costs ${p} "
    "a meter. How much does the fabric for {w} skirts and one dress cost?",
    "{a} folds {x} paper cranes a day for {t} days, and {b} folds {y} more a day for the same days. "
    "How many cranes do they fold together?",
    "A craft store sells glue sticks in packs of {slices} for ${p}. A class of {x} children needs {z} "
    "glue sticks each. How much do the glue sticks cost in whole packs?",
    "Each birdhouse {a} builds takes {w} boards and {y}0 nails. How many boards and how many nails "
    "does {a} need for {z} birdhouses?",
    "{a}'s quilt is {w} squares wide and {h} squares long, and each square is {y}0 centimeters on a "
    "side. How many meters of binding go around its edge?",
    "A candle {x}0 centimeters tall burns down {z} centimeters an hour. {a} lights it at 6:00 pm. At "
    "what time is it {y} centimeters tall?",
    "{a} throws a clay pot on the wheel in {m} minutes and glazes it in {z} more minutes. How many "
    "hours does {a} spend on {w} pots?",
    "{a} sells knitted hats for ${x} each, and the yarn for each hat costs ${q}. How much profit does "
    "{a} make on {w} hats?",
    "A roll of ribbon is {t} meters long. {a} cuts {w} pieces of {z}0 centimeters for gift bows. How "
    "many meters of ribbon are left on the roll?",
    "{a} is painting a wall {w} meters wide and {z} meters high. One liter of paint covers {y} square "
    "meters, and the wall gets two coats. How many liters of paint does {a} need?",
    "{a} needs {x}0 tiles for a mosaic table top. Tiles come in boxes of {slices}, and {a} already has "
    "{y} tiles. How many boxes does {a} buy?",
    "{a} and {b} are making a paper chain for a party. {a} makes {x} links and {b} makes {y} more than "
    "{a}. Each link adds {z} centimeters. How long is the chain in meters?",
    "A knitting group of {w} people each knit {z} squares a week for a blanket of {x}0 squares. How "
    "many weeks does the blanket take, counting a part week as one?",
    "{a} buys {h} skeins of embroidery thread at ${q} each and a hoop for ${p}, and pays with a $100 "
    "note. How much change does {a} get?",
    "{a} rolls {x}0 clay beads, paints {pct}% of them blue and half of the rest red. How many beads "
    "are neither blue nor red?",
    "A woodworker sells cutting boards for ${p}0 each. The wood for one board costs ${y} and the oil "
    "${q}. How much profit does the woodworker make on {w} boards?",
    "{a} weaves {y} rows of a rug an hour and weaves {z} hours a day. The rug needs {x}0 rows. How "
    "many days does the rug take?",
    "A box of crayons holds {slices} crayons. An art class of {x} children shares {w} boxes equally. "
    "How many crayons does each child get, and how many are left over?",
    "{a} sews {z} buttons on each shirt. Buttons come on cards of {slices}. How many cards of buttons "
    "does {a} need for {x} shirts?",
    "{a} wants to make {x}0 friendship bracelets for summer camp. On Monday {a} makes {y}, on Tuesday "
    "twice as many and on Wednesday {z} more than on Tuesday. How many bracelets are still to make?",
    "Each felt puppet needs {z} sheets of felt. {a} has {x} sheets. How many puppets can {a} make, "
    "and how many sheets are left?",
    "{a} is framing {w} paintings, each {x} centimeters wide and {y}0 centimeters tall. How many "
    "meters of frame molding does {a} need for all of them?",
    "A candle-making class costs ${x} a person plus ${q} for every extra candle. {a} goes with {z} "
    "friends, and each of them makes {w} extra candles. What is the total bill?",
    "{a} crochets a blanket of {x} squares, and each square takes {m} minutes. If {a} crochets {h} "
    "hours a week, how many weeks does the blanket take?",
    "{a} bought {used} balls of wool at ${p} each and used {y} of them for a sweater. How much did the "
    "unused wool cost?",
    "The art club sells painted rocks: small ones for ${q} and large ones for ${p} more. It sold {x} "
    "small rocks and {w} large ones. How much money did the club raise?",
    "{a} glues {slices} photos on each page of a scrapbook with {x} pages, and {z} pages are full. "
    "How many more photos does {a} need to fill the book?",
    "{a} makes {slices} tassels for each of {w} cushions, and each tassel takes {z} meters of yarn. A "
    "ball holds {x}0 meters. How many balls does {a} use, counting a part-used ball as one?",
    "{a} starts painting at 1:00 pm and paints a small canvas in {m} minutes, with a {z}-minute break "
    "after each canvas but the last. At what time does {a} finish {w} canvases?",
)
# fmt: on


def craft_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of crafts (knitting and crochet, beads, candles and soap, quilts and
    sewing, painting, woodwork, pottery, cards and scrapbooks, a craft fair's sales, a class's
    supplies), from ``_CRAFT_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_CRAFT_STORY_TEMPLATES, count, seed + 289)


# GSM8K-shaped stories of parties (``party-problems``): balloons, invitations and guests, cakes,
# pizzas and cupcakes shared out, goody bags and prizes, halls, tables and chairs rented, entertainers
# paid by the hour, games and teams, drinks by the bottle and the pitcher, decorations, a school
# dance's tickets; every slot is filled by :func:`_story_values`.
# fmt: off
_PARTY_STORY_TEMPLATES = (
    "{a} is having a birthday party for {x} guests. Each guest gets {z} balloons, and balloons come in "
    "bags of {slices}. How many bags of balloons does {a} need?",
    "A pizza is cut into {slices} slices. At {a}'s party {x} children each eat {z} slices. How many "
    "pizzas must be ordered?",
    "{a} sends party invitations to {x}0 friends, and {pct}% of them say they will come. How many "
    "friends are coming to the party?",
    "Goody bags come in packs of {slices} for ${p}, and {a} puts ${q} of toys in each bag. How much does "
    "{a} spend on {x} goody bags, buying whole packs of bags?",
    "The party hall costs ${x}0 for the first {z} hours and ${p} for each hour after that. {a}'s party "
    "lasts {t} hours. How much does the hall cost?",
    "{a} blows up {y} balloons a minute and {b} blows up {z} a minute. How many whole minutes do they "
    "need together to blow up {x}0 balloons?",
    "A birthday cake serves {slices} people. {a} expects {x} guests and {w} family members. How many "
    "cakes should {a} order?",
    "{a} buys {w} packs of party hats with {slices} hats in each pack. At the party {y} hats get torn "
    "and {z} are lost. How many hats are still good?",
    "Juice comes in bottles of {z} liters. Each of the {x} guests drinks about {y}00 milliliters. How "
    "many bottles does {a} need?",
    "{a} hangs streamers along the {w} walls of a room, each {h} meters long, and streamer rolls are {t} "
    "meters long. How many whole rolls must {a} buy?",
    "The party starts at 3:00 pm. The games take {m} minutes, lunch {y}0 minutes and the cake {z}0 "
    "minutes. At what time does the party end?",
    "{a} pays a magician ${x}0 and a face painter ${p} an hour for {z} hours. How much do the two "
    "entertainers cost together?",
    "{a} and {b} share the cost of a party equally. The food costs ${x}0, the drinks ${y}0 and the cake "
    "${p}. How much does each of them pay?",
    "{a} bakes {w} trays of {slices} cupcakes, and each guest gets {z} cupcakes. How many guests can "
    "come to the party?",
    "Balloons cost ${q} for a bunch of {z}. How much do {x} bunches cost, and how many balloons is that?",
    "{a} has $100 for a party. {a} buys {w} bags of chips at ${q} each and a cake for ${x}. How much "
    "money is left?",
    "The {x} guests at a wedding sit at tables of {t}. How many tables are needed, and how many seats "
    "are empty at the last table?",
    "{a} orders {w} pizzas at ${p} each, pays a ${q} delivery fee and tips {pct}% of the pizzas' price. "
    "How much does {a} pay in all?",
    "A pinata holds {x}0 candies. {y} children share them equally. How many candies does each child "
    "get, and how many are left over?",
    "{a} makes lemonade for {x} guests. Each guest drinks {z} cups, and one pitcher fills {t} cups. How "
    "many pitchers does {a} make?",
    "{a} splits the {x} children at the party into teams of {z}. How many full teams are there, and "
    "how many children are left over?",
    "Invitations come in packs of {slices} for ${p}, and each needs a stamp costing ${q}. How much does "
    "it cost to send {x} invitations?",
    "{a} rents {w} tables at ${p} each and {x} chairs at ${q} each for a party. How much does the rent "
    "come to?",
    "A photographer charges ${x}0 for the first hour and ${p}0 for each hour after that. How much does "
    "the photographer cost for a {z}-hour party?",
    "{a}'s party runs from noon to {z}:00 pm. If each game takes {m} minutes, how many games fit in "
    "the party?",
    "At {a}'s party each of the {x} guests eats {z} sandwiches, and a loaf of bread makes {y} "
    "sandwiches. How many loaves does {a} need?",
    "{a} and {b} decorate for a party. {a} hangs {x} paper lanterns and {b} hangs {y} fewer than twice "
    "as many as {a}. How many lanterns hang in all?",
    "The ice cream at {a}'s party comes in tubs of {slices} scoops. {x} children each have {z} scoops. "
    "How many tubs are opened, and how many scoops are left in the last one?",
    "{a} spends ${p} on balloons, ${x} on food and {pct}% of the food's cost on decorations. How much "
    "does the party cost?",
    "A school dance sold {x}0 tickets at ${p} each. The DJ cost ${q}0 and the snacks ${z}0. How much "
    "money did the dance raise after its costs?",
    "For a party {a} fills {w} bowls with {x}0 grapes each. The guests eat all but {y} grapes from each "
    "bowl. How many grapes are eaten?",
    "{a} makes {x} party favors an hour and {b} makes {y} an hour. They work together for {z} hours. How "
    "many favors do they make?",
    "A caterer charges ${p} a guest plus a ${x}0 service fee. How much does a party of {t}0 guests "
    "cost?",
    "{a} bakes {w} batches of {slices} cookies for a party, and {y} cookies break. The rest go in bags "
    "of {z}. How many bags can {a} fill?",
    "The party room is {x} meters long and {t} meters wide, and each guest needs {z} square meters. How "
    "many guests can the room hold?",
    "{b} turns {x}, and {a} puts one candle on the cake for each year. Candles come in packs of "
    "{slices}. How many packs does {a} buy, and how many candles are left over?",
    "The guests arrive in {w} cars with {z} people in each, and {y} more come by bus. Each guest gets "
    "{h} raffle tickets. How many raffle tickets are handed out?",
    "A bouncy castle costs ${x}0 a day to rent. {a} and {z} friends split the cost equally. How much "
    "does each of them pay?",
    "{a} fills {x} water balloons in {m} minutes. At that rate, about how many can {a} fill in {h} "
    "hours?",
    "At the end of the party {pct}% of the {x}0 cupcakes are left, and {a} shares them equally among "
    "{z} neighbors. How many whole cupcakes does each neighbor get?",
)
# fmt: on


def party_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of parties (balloons, invitations and guests, cakes, pizzas and cupcakes,
    goody bags, halls, tables and chairs, entertainers, games and teams, drinks, decorations, a school
    dance), from ``_PARTY_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_PARTY_STORY_TEMPLATES, count, seed + 307)


# GSM8K-shaped stories of pets (``pet-problems``): food by the cup, the bag and the can, walks and
# their minutes, fish tanks and their water, a vet's bills, grooming and boarding by the day, litters
# of puppies and kittens, a pet shop's stock and sales, a shelter's adoptions, pet sitting for pay,
# hamster wheels and bird seed; every slot is filled by :func:`_story_values`.
# fmt: off
_PET_STORY_TEMPLATES = (
    "{a}'s dog eats {z} cups of food a day, and a bag holds {x} cups. How many whole days does one bag "
    "last?",
    "{a} has {w} cats. Each cat eats {q} cans of food a day, and cans come in boxes of {slices}. How "
    "many boxes does {a} need for {t} days?",
    "{a} walks the dog for {m} minutes every morning and twice as long every evening. How many hours "
    "of walks is that in {w} weeks?",
    "A fish tank holds {x}0 liters of water. {a} changes {pct}% of the water every week. How many "
    "liters of water does {a} change in {z} weeks?",
    "The vet charges ${x}0 for a check-up and ${p} for each vaccine. {a}'s puppy gets a check-up and "
    "{z} vaccines. How much does the visit cost?",
    "A kennel charges ${p}0 a night to board a dog and ${q}0 more for a second dog. How much does {a} "
    "pay to board two dogs for {t} nights?",
    "{a}'s dog had a litter of {t} puppies. {a} keeps {q} of them and sells the rest for ${x}0 each. How "
    "much money does {a} get?",
    "A pet shop has {t}0 hamsters. It sells {y} on Monday, {z} on Tuesday and gets {w} new ones on "
    "Wednesday. How many hamsters does it have now?",
    "An animal shelter has {x}0 dogs and {y}0 cats. This month {pct}% of the dogs and half of the cats "
    "were adopted. How many animals were adopted?",
    "{a} pet-sits for ${p} a day per pet. {a} looks after {b}'s {z} cats for {t} days. How much does "
    "{a} earn?",
    "{a}'s rabbit eats {y}0 grams of hay a day. Hay comes in {z}-kilogram bags. How many days does one "
    "bag last?",
    "A parrot eats {z} tablespoons of seed a day, and a box of seed holds {x}0 tablespoons. How many "
    "boxes does the parrot need in a year of 365 days?",
    "{a}'s hamster runs {x}0 laps on its wheel every night, and one lap is {z} meters. How many "
    "kilometers does it run in {w} weeks?",
    "A dog groomer takes {m} minutes for a small dog and {y}0 minutes for a big one. On Saturday she "
    "grooms {w} small dogs and {z} big ones. How many hours does she work?",
    "{a} buys a leash for ${p}, a collar for ${q}, and {w} toys at ${z} each for a new puppy. How much "
    "does {a} spend?",
    "{a}'s cat weighs {y} kilograms and {b}'s cat weighs {z} kilograms more. {c}'s cat weighs half as "
    "much as the two together. How much does {c}'s cat weigh?",
    "A pet shop sells goldfish at ${q} each and tanks at ${x}. {a} buys a tank and {t} goldfish, paying "
    "with a ${bill} bill. How much change does {a} get?",
    "{a} walks {w} dogs for {b}'s neighbors, earning ${p} a dog each day. How much does {a} earn in {z} "
    "weeks of 5 walking days?",
    "Each of the {x} dogs at a shelter eats {z} cups of food a day. A bag of food holds {y}0 cups. How "
    "many bags does the shelter use in a week?",
    "{a} fills the bird feeder with {x}0 grams of seed. The birds eat {y}0 grams a day. After how many "
    "whole days must {a} fill it again?",
    "A puppy weighed {z} kilograms at 8 weeks and gains {y}00 grams a week. How much does it weigh at "
    "{t}0 weeks old?",
    "{a} has {x}0 fish. {pct}% of them are guppies and the rest are tetras. How many tetras does {a} "
    "have?",
    "Cat litter costs ${p} a bag, and {a}'s {z} cats use one bag every {w} days. How much does litter "
    "cost in {t}0 days?",
    "{a} trains the dog for {m} minutes a day, {w} days a week. How many minutes is that in a month of "
    "4 weeks, and how many hours?",
    "A turtle tank's heater uses {y}0 watts for {h} hours a day. How many watt-hours does it use in a "
    "week?",
    "At the dog park there are {x} dogs. {y} more arrive and {z} leave. Then a third of the dogs go "
    "home. How many dogs are still at the park?",
    "{a} saves ${p} a week to buy a ${x}0 cage for a guinea pig. How many weeks must {a} save?",
    "A kitten drinks {y}0 milliliters of milk {z} times a day. How many liters does it drink in {t} "
    "days?",
    "{a}'s dog has {w} toys, {b}'s dog has {z} times as many, and {c}'s dog has {y} fewer than {b}'s. "
    "How many toys do the three dogs have?",
    "The vet sees {x}0 pets on Monday. {pct}% are dogs, and half of the rest are cats. How many of the "
    "pets are neither dogs nor cats?",
    "{a} buys dog treats in packs of {slices} for ${q}. The dog gets {z} treats a day. How much do "
    "treats cost for {t}0 days, buying whole packs?",
    "A horse eats {y} kilograms of hay and {z} kilograms of oats a day. Hay costs ${q} a kilogram and "
    "oats ${p} a kilogram. How much does feeding the horse cost in a week?",
    "{a} cleans the rabbit hutch every {z} days and the fish tank every {w} days. Both were cleaned "
    "today. In how many days will {a} clean both on the same day again?",
    "A pet hotel has {x}0 rooms. On Friday {y} rooms are empty and each full room holds {z} pets. How "
    "many pets are in the hotel?",
    "{a}'s snake eats one mouse every {w} days, and frozen mice cost ${q} each. How much does feeding "
    "the snake cost over {t}0 days?",
    "A dog walker charges ${p} for a {m}-minute walk. How much does she earn in a day with {t} walks, "
    "and how many hours does she walk?",
    "{a} adopts {z} kittens. Each needs {q} vaccines at ${x} each and a ${p}0 check-up. How much do the "
    "vet visits cost?",
    "A pet shop orders {w}0 boxes of {slices} dog bones. It sells {x} bones. How many bones are left?",
    "{a}'s two dogs eat {y} and {z} cups of food a day. A {x}0-cup bag costs ${p}0. How much does {a} "
    "spend on food in {t}0 days, buying whole bags?",
    "{a}'s fish tank is {x}0 centimeters long, {y}0 wide and {z}0 high. How many liters does it hold "
    "when full (1 liter is 1000 cubic centimeters)?",
)
# fmt: on


def pet_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of pets (food, walks, fish tanks, the vet, boarding and grooming, litters,
    a pet shop, a shelter, pet sitting, hamsters, birds and horses), from ``_PET_STORY_TEMPLATES`` (no
    instruction appended)."""
    return _template_stories(_PET_STORY_TEMPLATES, count, seed + 367)


# GSM8K-shaped stories of running a home (``home-problems``): the electricity, water and internet
# bills, rent split between roommates, laundry loads, moving boxes and vans, cleaning rotas, light
# bulbs and their watts, furniture and shelves, heating oil, a leaking tap, a family's chores and their
# pocket money; every slot is filled by :func:`_story_values`.
# fmt: off
_HOME_STORY_TEMPLATES = (
    "{a}'s electricity bill is ${x} a month plus ${q} for every day the heater runs. The heater runs {t} "
    "days in March. What is the March bill?",
    "{a} and {w} roommates share a flat whose rent is ${x}00 a month, split evenly. How much does each "
    "of them pay in a year?",
    "{a} does {z} loads of laundry a week, and each load uses {y}0 liters of water. How many liters is "
    "that in {t} weeks?",
    "{a} is moving house and packs {x} boxes of books, {y} boxes of clothes and twice as many boxes of "
    "kitchen things as clothes. How many boxes does {a} pack?",
    "A moving van costs ${p}0 a day and ${q} for each kilometer. {a} rents it for {z} days and drives "
    "{x}0 kilometers. How much does the van cost?",
    "{a}'s house has {x} light bulbs of {y}0 watts each. {a} swaps them for bulbs of {w} watts. How many "
    "watts does {a} save when every bulb is on?",
    "A leaking tap drips {y}0 milliliters an hour. How many liters does it waste in {w} days before {a} "
    "fixes it?",
    "{a} pays ${p}0 a month for the internet. A new plan costs ${x} a month with the first {z} months "
    "free. How much does {a} save in the first year by switching?",
    "The family's water bill was ${x} in June. In July it was {pct}% higher. What was the July bill?",
    "{a} cleans the kitchen every {z} days and the bathroom every {w} days. Both were cleaned on Monday. "
    "After how many days are both cleaned on the same day again?",
    "{a} gives each of the {z} children ${q} a week of pocket money and ${p} more for mowing the lawn. "
    "The oldest mows it every week. How much does {a} pay out in {t} weeks?",
    "A bookshelf has {w} shelves, and each shelf holds {y}0 books. {a} has {x}0 books. How many "
    "bookshelves does {a} need?",
    "{a} buys a sofa for ${x}00 and pays it off at ${p}0 a month. How many months does it take to pay "
    "for the sofa?",
    "The heating oil tank holds {x}00 liters. The house burns {y}0 liters a week in winter. How many "
    "whole weeks does a full tank last?",
    "{a}'s dishwasher runs {w} times a week and uses {z} kilowatt-hours each time. At ${q} per "
    "kilowatt-hour, what does it cost to run for {t} weeks?",
    "{a} spends {m} minutes vacuuming, twice as long dusting and {y} minutes less than that mopping. How "
    "many minutes does the cleaning take?",
    "{a}, {b} and {c} split the chores. {a} does {y} a week, {b} does {z} more than {a}, and {c} does "
    "half as many as {b} and {a} together. How many chores does {c} do?",
    "A box of {slices} light bulbs costs ${p}. {a} needs {x} bulbs for the new house. How much does "
    "{a} spend, buying whole boxes?",
    "{a} assembles a wardrobe in {h} hours and a bed in {m} minutes. How many minutes does {a} spend "
    "assembling {z} wardrobes and {w} beds?",
    "{a}'s rent is ${x}00 a month and goes up {pct}% next year. How much more rent will {a} pay next "
    "year than this year?",
    "A family uses {y} rolls of paper towels a week. A pack of {slices} rolls costs ${p}. How much do "
    "paper towels cost the family in {t} weeks, buying whole packs?",
    "The thermostat is set to 2{q} degrees. {a} turns it down {z} degrees at night and up {w} degrees "
    "in the morning. How far above the daytime setting is it in the morning?",
    "{a} hires a cleaner for {h} hours every week at ${p} an hour. How much does {a} pay the cleaner in "
    "a year of 52 weeks?",
    "{a}'s washing machine holds {y} kilograms of clothes. The family has {x} kilograms of laundry. How "
    "many loads must {a} run?",
    "A house has {w} rooms. Each room needs {z} new curtains at ${p} each and a curtain rod at ${q}0. "
    "How much does {a} spend on the windows?",
    "{a} sorts {x}0 moving boxes. {pct}% are heavy and go to the garage; a third of the rest go "
    "upstairs. How many boxes go upstairs?",
    "The electricity meter read {x}00 kilowatt-hours on the first of the month and {x}{y}0 on the last "
    "day. How many kilowatt-hours were used?",
    "{a} runs the fan for {h} hours a day. The fan uses {y}0 watts. How many kilowatt-hours does it use "
    "in {t}0 days?",
    "{a}'s family of {w} uses {y}0 liters of water each a day. Water costs ${q} per 1000 liters. What "
    "does their water cost in a 30-day month?",
    "{a} shares a house with {z} friends. The bills this month are rent ${x}00, power ${y}0 and "
    "internet ${p}0. How much does each person pay?",
    "{a} replaces {w} smoke alarm batteries every {z} months. How many batteries does {a} use in {t} "
    "years?",
    "A new fridge costs ${x}00 and uses ${q} of power a week less than the old one. The old one is "
    "sold for ${p}0. How much does {a} pay for the new fridge after the sale?",
    "{a} mows the lawn in {m} minutes and {b} takes {y} minutes longer. They each mow it every other "
    "week. How many minutes do they spend mowing in {t} weeks?",
    "{a} buys {z} packs of {slices} trash bags. The house uses {w} bags a week. How many weeks do the "
    "bags last?",
    "{a} and {b} clean {x} windows. {a} cleans {y} windows an hour and {b} cleans {z}. Working together, "
    "how many hours does the job take?",
    "The family spends ${p}0 a week on groceries and ${q}0 on cleaning supplies every {w} weeks. How "
    "much do they spend on both in {t}0 weeks?",
    "{a}'s home insurance costs ${x}0 a month, or the price of 11 months if paid for the year at once. "
    "How much does {a} save in {z} years by paying yearly?",
    "A tap fills a {y}0-liter bucket in {z} minutes. How long does it take to fill {w} buckets?",
    "{a} hangs {x} pictures, using {z} nails each, from a box of {y}0 nails. How many nails are left?",
    "{a} earns ${p} for each hour of chores and works {h} hours on Saturday and {z} on Sunday. {a} "
    "spends a third of it. How much does {a} keep?",
)
# fmt: on


def home_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of running a home (bills and meters, rent split between roommates, laundry,
    moving, cleaning, light bulbs, furniture, heating, chores and pocket money), from
    ``_HOME_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_HOME_STORY_TEMPLATES, count, seed + 371)


# GSM8K-shaped stories of sport (``sport-problems``): running laps and training weeks, swimming lengths,
# cycling by the kilometer, a league's points for wins and draws, a tournament's rounds, team kits and
# match tickets, a gym's fees, a coach's drills, free throws and their percent, a marathon's pace, a
# club's members and a stadium's seats; every slot is filled by :func:`_story_values`.
# fmt: off
_SPORT_STORY_TEMPLATES = (
    "{a} runs {z} laps of a {y}00-meter track every morning. How many kilometers does {a} run in {t} "
    "days?",
    "A football league gives 3 points for a win and 1 for a draw. {a}'s team won {x} games, drew {y} "
    "and lost {z}. How many points does the team have?",
    "{a} swims {x} lengths of a 25-meter pool on Monday and {y} more lengths on Wednesday than on "
    "Monday. How many meters does {a} swim on the two days?",
    "{a}'s club enters a knockout tournament of {slices} teams; half the teams go out each round. {x} "
    "people watch each game and a ticket costs ${q}. How much ticket money do the games bring in?",
    "A team buys {x} shirts at ${p} each and {x} pairs of socks at ${q} each. How much does the team's "
    "kit cost?",
    "{a} cycles {x} kilometers on Saturday and {y} kilometers more on Sunday. How many kilometers does "
    "{a} cycle in {w} weekends like this?",
    "A stadium has {x}00 seats. {pct}% of them are sold for Saturday's match. How many seats are still "
    "empty?",
    "Tickets for the match cost ${p} for adults and ${q} for children. {a} buys tickets for {z} adults "
    "and {w} children. How much does {a} pay?",
    "{a} made {x} free throws out of {x}0 tries last season. This season {a} made {y} more out of the "
    "same number of tries. What percent of the tries did {a} make this season?",
    "A gym charges ${x} a month or ${x}0 for a whole year. How much does {a} save in a year by paying "
    "for the year at once?",
    "A coach runs {w} drills in a practice, each {m} minutes long, with a {z}-minute break between two "
    "drills. How many minutes does the practice last?",
    "{a} trains for a marathon, running {y} kilometers in the first week and {z} kilometers more each "
    "week after that. How many kilometers does {a} run in week {t}?",
    "A basketball team scored {x} points in the first half and {y} more in the second half. Free "
    "throws made {z}0% of the second half's points, rounded down. How many points did free throws make?",
    "{a} skips rope {x}0 times a minute. How many skips does {a} make in {m} minutes of practice a day "
    "for {w} days?",
    "A tennis club has {x} members. Each member pays ${p}0 a month and the club pays ${y}00 a year for "
    "the courts. How much money does the club have left after a year?",
    "{a} rows {y} kilometers in {m} minutes. At that pace, how many minutes does it take {a} to row "
    "{z}{y} kilometers?",
    "In a relay race each of the {w} runners runs {y}00 meters. {a}'s team finishes in {h} minutes. "
    "How many meters did the team run per minute?",
    "{a}, {b} and {c} scored {s1}, {s2} and {s3} points in the archery contest. How many points "
    "short of 300 did they fall together?",
    "{a} books a swimming lane {h} hours a day for the club's training. Each swimmer trains for {m} "
    "minutes. How many swimmers can use the lane in {w} days?",
    "{a} buys running shoes for ${x}0 and a watch that costs {z} times as much. {a} pays with ${bill} "
    "notes. How many notes does {a} need?",
    "A cycling race has {w} stages of {x}0 kilometers each and one more stage of {y}0 kilometers. How "
    "long is the race?",
    "{a}'s team plays {t} home games and {w} away games. A bus to each away game costs ${p}0. How much "
    "do the away trips cost?",
    "{a} climbs a wall of {x} meters {y} times and a wall of {z}{w} meters {h} times. How many meters "
    "does {a} climb?",
    "A league of {slices} teams plays every other team twice, once at home and once away. Each game "
    "sells {x}0 tickets at ${p}. How much ticket money does {a}'s league take in a season?",
    "{a} lifts {x} kilograms and adds {q} kilograms every week. After {t} weeks {a} misses a week and "
    "loses {y} kilograms. What does {a} lift then?",
    "{a}'s school sports day has {w} events. Each event has {slices} runners and each runner gets {z} "
    "stickers. Stickers come in sheets of {x}. How many sheets does {a} buy?",
    "{a} walks {x}00 steps in {m} minutes. How many steps does {a} walk in {h} hours at that pace?",
    "A soccer ball costs ${p} and a pump ${q}. The club buys {y} balls and {z} pumps and gets {pct}% "
    "off. How much does the club pay?",
    "{a} practiced golf for {m} minutes on each of {w} days and {b} practiced for {h} hours in all. "
    "Who practiced longer, and by how many minutes?",
    "{a}'s hockey team won {pct}% of its {x}0 games and drew {y}. How many games did it lose?",
    "{a} swims a length in {y}0 seconds and {b} takes {z} seconds less. How many whole lengths does {b} "
    "swim in {m} minutes?",
    "The club's {x} members pay ${p} each for a trophy and ${q}0 each for a dinner. The trophy costs "
    "${y}. How much is left from the trophy money?",
    "A triathlon is {w} kilometers of swimming, {x} kilometers of cycling and {y} kilometers of running. "
    "What percent of the race, rounded down, is the cycling?",
    "{a} scored {y} goals in each of the first {z} games and {w} goals in the next game. How many goals "
    "a game did {a} average?",
    "A team's {slices} players each drink {y} bottles of water at a game. Bottles come in packs of {z}. "
    "How many packs does the team need for {t} games?",
    "{a} jogs {z} kilometers to the park, runs {w} laps of {y}00 meters there and jogs home. How many "
    "meters does {a} cover?",
    "A volleyball tournament has {w} pools of {z} teams, and every team in a pool plays every other "
    "team in it once. Each game takes {m} minutes of court time. How many minutes of court time do the "
    "pool games need?",
    "{a} saves ${p} a week for a new bike that costs ${y}0 more than the ${x}0 {a} already has. How "
    "many weeks until {a} can buy it?",
    "A ski pass costs ${p}0 a day or ${x}0 for a week. {a} skis {w} days. Which is cheaper, and by "
    "how much?",
    "{a} does {x} push-ups on the first day and {y} more each day. How many push-ups does {a} do in "
    "{z} days?",
)
# fmt: on


def sport_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of sport (running, swimming and cycling, a league's points, tournaments,
    kits and tickets, gyms, coaching, a marathon's training, clubs and stadiums), from
    ``_SPORT_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_SPORT_STORY_TEMPLATES, count, seed + 383)


# GSM8K-shaped stories of weather (``weather-problems``): rainfall by the millimeter and a week's total,
# snow that falls and melts, temperatures that rise and fall through a day, sunny and rainy days in a
# month, a rain barrel and a reservoir, a weather station's readings and their mean, umbrellas and ice
# cream sold by the weather, a storm's wind and its hours, frost and the heating; every slot is filled
# by :func:`_story_values`.
# fmt: off
_WEATHER_STORY_TEMPLATES = (
    "{a}'s rain gauge caught {x} millimeters on Monday, {y} millimeters more on Tuesday and half of "
    "Tuesday's rain on Wednesday. How many millimeters of rain fell in the three days?",
    "On {a}'s walk the temperature was {z} degrees at {w} in the morning and rose {y} degrees every hour "
    "until noon. What was the temperature at noon?",
    "{a}'s town had 1{y} sunny days in a 30-day month, and {z} of the other days had rain. How many days "
    "were neither sunny nor rainy?",
    "On {a}'s street snow fell {y} centimeters an hour for {t} hours, then {z} centimeters melted. How "
    "deep is the snow?",
    "{a}'s rain barrel holds {x}0 liters. Every millimeter of rain on the roof adds {y} liters. How many "
    "millimeters of rain fill the empty barrel, rounded up?",
    "A weather station measured {s1}, {s2} and {s3} millimeters of rain in three months. What was the "
    "mean monthly rainfall, rounded down?",
    "{a}'s shop sells {y} umbrellas on a dry day and {w} times as many on a rainy day. Last week had {z} "
    "rainy days. How many umbrellas did the shop sell in the 7 days?",
    "{a} sells {x} ice creams on a day of 2{y} degrees and {q}0 more on a day of 3{y} degrees. How many "
    "ice creams does {a} sell on {z} warm days and {w} hot days?",
    "The reservoir holds {x}00 million liters. A dry month takes out {y}0 million liters and a storm puts "
    "back {z}0 million. How much water is in it after the month and the storm?",
    "The wind at {a}'s farm blew at {x} kilometers per hour and rose {pct}% during the storm. How fast did "
    "it blow in the storm?",
    "{a} shovels snow for {m} minutes each morning for {w} days and {b} shovels for {h} hours in all. Who "
    "shovels longer, and by how many minutes?",
    "It was {z} degrees below zero when {a} woke up and {x} degrees above zero by the afternoon. How many "
    "degrees did the temperature rise?",
    "{a}'s city had {x} millimeters of rain in April. May had {pct}% more. How much rain fell in May?",
    "{a} records the temperature {w} times a day for {t} days. How many readings does {a} write down?",
    "A snowstorm drops {y} centimeters of snow on Friday and {z} centimeters on Saturday. On Sunday half "
    "of the snow melts. How deep is the snow on Sunday evening?",
    "The forecast gives a {pct}% chance of rain on each of the {x} days of {a}'s holiday. On how many "
    "days, rounded down, should {a} expect rain?",
    "{a}'s garden needs {y}0 liters of water a week. It rains {z} liters' worth this week. How many "
    "watering cans of {w} liters does {a} still need, rounded up?",
    "A ski resort had {x}0 centimeters of snow. It snowed {y} centimeters a day for {z} days and then {w} "
    "centimeters melted each day for {q} days. How deep is the snow now?",
    "The heating in {a}'s house turns on below {y} degrees. The temperature starts at 2{q} degrees and "
    "falls {z} degrees an hour. After how many whole hours does the heating turn on?",
    "Hailstones damaged {x} of the {x}{y} cars in a car park. What percent of the cars were not damaged, "
    "rounded down?",
    "The ice on {a}'s lake is {y} centimeters thick and grows {q} centimeters a week. It is safe for "
    "skating at {y}{z} centimeters. How many whole weeks until it is safe?",
    "{a} drives {x}0 kilometers in the rain at {y}0 kilometers per hour and {p}0 kilometers in the sun at "
    "{z}0 kilometers per hour more. How many hours does the drive take?",
    "In a 30-day month it rained on {t} days. Each rainy day {a} takes the bus for ${q} instead of "
    "walking. How much does {a} spend on the bus?",
    "{a}'s class launches a weather balloon that rises {y}0 meters a minute. How high is it after {m} "
    "minutes?",
    "{a} sells hot chocolate for ${q} a cup: {x} cups on a cold day and half as many, rounded down, on a "
    "mild day. How much does {a} take in a week of {z} cold days and the rest mild?",
    "The sun rises at {h}:{m} and sets {t} hours and {z}0 minutes later. How many minutes of daylight are "
    "there?",
    "A flood raised the river {x}0 centimeters above its normal level. It falls {y} centimeters an hour. "
    "How many hours until it is back to normal, rounded up?",
    "{a} counted {x} lightning flashes in the first hour of the storm, {y} more in the second hour and "
    "{z} fewer in the third hour than in the second. How many flashes did {a} count?",
    "{a}'s town clears {y}0 kilometers of road of snow a day with {z} ploughs. How many kilometers does each "
    "plough clear in {w} days?",
    "The highest temperatures this week were 2{q}, 2{z}, 2{y}, 1{w}, 2{q}, 1{y} and 2{w} degrees. How many "
    "days were above 20 degrees?",
    "{a}'s rain gauge showed {x} millimeters on Sunday. By Saturday it showed {x}{y} millimeters. How "
    "much did it rain on average each of the 6 days, rounded down?",
    "A farm's {x}0 sheep each need {z} kilograms of hay a day while snow covers the grass. Snow covered it "
    "for {w} days. How many kilograms of hay did the sheep eat?",
    "In {a}'s valley it rains {y} days out of every {slices}. How many rainy days are there in {x}{y} "
    "days, rounded down?",
    "{a}'s solar panel makes 1{y} kilowatt-hours on a sunny day and {q} on a cloudy one. June had 2{z} sunny "
    "days and the rest of its 30 days were cloudy. How much did the panel make in June?",
    "{a} and {b} build a snowman. {a} rolls a ball of {y}0 centimeters, {b} one of {z}0 centimeters, and "
    "the head is {w}0 centimeters. How tall is the snowman if the balls are stacked?",
    "A storm cut the power for {h} hours and {m} minutes. {a}'s freezer stays cold for 1{y} hours without "
    "power. How many minutes to spare did it have?",
    "A weather app costs ${q} a month or ${p}0 a year. Which way of paying is cheaper for {a} over {z} "
    "years, and by how much?",
    "Fog closed the airport for {h} hours. {x} flights an hour were delayed, each by an average of {m} "
    "minutes. How many minutes of delay did the fog cause in all?",
    "A wind turbine turns {x} times a minute in a light wind and {z} times as fast in a storm. How many "
    "turns does it make in {m} minutes of storm?",
    "{a} walks the dog for {m} minutes on a dry day and {y} minutes less on a wet day. This week had {z} "
    "wet days. How many minutes did {a} walk the dog in the 7 days?",
)
# fmt: on


def weather_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of weather (rain and snow, temperatures, sunny days, rain barrels and
    reservoirs, a weather station, umbrellas and ice cream, storms and wind, frost and heating), from
    ``_WEATHER_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_WEATHER_STORY_TEMPLATES, count, seed + 397)


# GSM8K-shaped stories of music (``music-problems``): a band's tour and its tickets, practice minutes
# and lessons, instruments and strings bought and replaced, albums and songs by the minute and second,
# choirs and orchestras by section, concerts by the clock, a playlist, streaming plays and their pay,
# a record shop's sales; every slot is filled by :func:`_story_values`.
# fmt: off
_MUSIC_STORY_TEMPLATES = (
    "{a}'s band plays {w} concerts on its tour. Each concert sells {x}0 tickets at ${p} each. How much "
    "money do the tickets bring in?",
    "{a} practices the violin for {m} minutes on each weekday and {y}0 minutes on each day of the weekend. "
    "How many minutes does {a} practice in {z} weeks?",
    "A music shop sells guitars for ${x}0 and amplifiers for ${p}0. {a} buys {q} guitars and {z} "
    "amplifiers for the school band. How much does {a} spend?",
    "{a}'s new album has {t} songs. Each song lasts {z} minutes and {m} seconds. How many seconds long is "
    "the album?",
    "A choir has {x}0 singers. {pct}% of them sing soprano and the rest split evenly between alto and "
    "bass. How many sing alto, rounded down?",
    "{a} adds {y} songs to a playlist every day for {t} days and then removes {z} songs that {a} no "
    "longer likes. How many songs are on the playlist?",
    "Piano lessons cost ${p} for {m} minutes. {a} takes {w} lessons of {m} minutes and one lesson twice "
    "as long at the same rate. How much does {a} pay for the lessons?",
    "A concert hall has {x} rows of {t}0 seats. {pct}% of the seats were sold for the first show. How "
    "many seats were empty at the first show?",
    "{a} knows {y} chords on the guitar and learns {z} new chords every week. How many chords will {a} "
    "know after {t} weeks?",
    "A drummer hits the snare {x} times a minute in a song that lasts {z} minutes and {m} seconds. How "
    "many times does the drummer hit the snare?",
    "{a} saves ${y} a week for a ${x}0 keyboard, and {b} gives {a} ${p} toward it. How many whole weeks "
    "must {a} save, rounded up?",
    "The school orchestra has {x}0 students: {y} play the flute, {w} times as many play the violin and "
    "the rest play the drums. How many students play the drums?",
    "A song earns ${q} for every 1000 plays. {a}'s song was played {x}000 times in its first month and "
    "{pct}% more in its second. How much did the song earn in the two months?",
    "{a} restrings {w} guitars with 6 strings each and {z} basses with 4 strings each. A string costs "
    "${q}. How much do the new strings cost?",
    "A music festival lasts {z} days with {w} bands a day, and each band plays for {m} minutes. How many "
    "hours of music are played at the festival, rounded down?",
    "{a} sings at {w} weddings a month and earns ${x} a wedding plus ${p} in tips each time. How much "
    "does {a} earn in {t} months?",
    "A record shop had {x}0 vinyl records. It sold {y}0 on Saturday and half of the rest, rounded down, "
    "on Sunday. How many records are left?",
    "{a}'s metronome ticks {x}{y} beats a minute. How many beats does it tick while {a} practices scales "
    "for {m} minutes?",
    "An opera ticket costs ${x}0 for an adult and ${p} less for a child. {a} buys {z} adult tickets and "
    "{w} child tickets. How much does {a} pay?",
    "{a} practiced the trumpet {s1} minutes in the first week, {s2} in the second and {s3} in the third. "
    "What was the mean practice time a week, rounded down?",
    "The band's van uses {y} liters of fuel every 100 kilometers. The tour covers {x}00 kilometers and "
    "fuel costs ${q} a liter. How much does the fuel for the tour cost?",
    "{a} writes {z} songs a month. Each song takes {h} hours to write and {y} hours to record. How many "
    "hours does {a} spend on songs in {w} months?",
    "A guitar costs ${x}0. The music shop takes {pct}% off, and {a} also buys a case for ${p}. How much "
    "does {a} pay in all?",
    "{a}'s piano has {y}{z} keys out of tune, and the tuner fixes {w} keys every ten minutes. How many "
    "minutes does the tuning take, rounded up to the next ten minutes?",
    "The marching band has {w} rows of {t} players. On the day of the parade {z} players are sick and {q} "
    "new players join. How many players march?",
    "{a} buys {w} packs of guitar picks with {slices} picks in each and loses {y} picks a month. How many "
    "whole months do the picks last?",
    "A concert starts at {h}:{m} in the evening. It has {t} songs of {z} minutes each and a {y}0-minute "
    "break. At what time does it end?",
    "{a} and {b} sell CDs after a show. {a} sells {x}, {b} sells {y} more than {a}, and each CD costs "
    "${p}. How much money do they take in?",
    "A music teacher has {x} students who each pay ${p}0 a month. The teacher rents a studio for ${y}0 a "
    "month. How much does the teacher keep in {z} months?",
    "{a} listens to music for {m} minutes on the bus each way to school, {w} days a week. How many hours "
    "is that in {t} weeks, rounded down?",
    "A drum kit has {w} drums and {z} cymbals. The music school owns {y} drum kits. How many drums and "
    "cymbals does the school own?",
    "The radio station plays {t} songs an hour and {pct}% of them are new songs. How many new songs does it "
    "play in {hours} hours, rounded down?",
    "{a}'s choir sells {x} cakes at ${q} each and {y}0 cups of juice at half a dollar each for its trip. "
    "How much money does the choir raise?",
    "A piano piece has {x} bars of {z} beats each, and {a} plays it at {y}0 beats a minute. How many "
    "minutes does the piece take, rounded up?",
    "{a} buys a ukulele for ${x} and {w} songbooks for ${q} each and pays with a $100 bill. How much "
    "change does {a} get back?",
    "An orchestra of {x}{y} musicians travels to a concert by bus. Each bus seats {slices} musicians. "
    "How many buses does the orchestra need?",
    "{a} plays {z} songs at every lesson and plays each song {w} times. How many times does {a} play a "
    "song in {t} lessons?",
    "A charity concert raised ${x}00. The hall took {pct}% and the {w} band members shared the rest "
    "equally. How much did each member get, rounded down?",
    "{a}'s guitar string breaks every {y} weeks and a new string costs ${q}. How much does {a} spend on "
    "strings in {x} weeks, counting only whole breaks?",
    "Each of the {w} members of {a}'s band practices {h} hours a week alone, and the band practices {z} "
    "hours a week together. How many hours does each member practice in {t} weeks?",
)
# fmt: on


def music_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of music (a band's tour and tickets, practice and lessons, instruments and
    strings, albums and songs, choirs and orchestras, concerts by the clock, playlists and streaming, a
    record shop), from ``_MUSIC_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_MUSIC_STORY_TEMPLATES, count, seed + 409)


# GSM8K-shaped stories of a factory (``factory-problems``): production lines and shifts, machines and
# their output, boxes, pallets and trucks, inspection and faulty parts, a warehouse's stock, workers'
# pay and overtime, materials bought and used, costs paid back; every slot is filled by
# :func:`_story_values`, and every template's answer stays at or above zero over the slots' ranges
# (the larger quantity takes the wider slot: ``{x}00`` less ``{y}0`` times ``{z}``).
# fmt: off
_FACTORY_STORY_TEMPLATES = (
    "Each of the factory's {w} production lines makes {x}0 chairs a day. How many chairs do the lines "
    "make in {z} days?",
    "A machine fills {x} bottles a minute. How many bottles does it fill in a shift of {h} hours?",
    "{pct}% of the {x}00 bolts made on Monday failed the inspection. How many bolts passed?",
    "A box holds {slices} cans. The factory packs {x}00 cans on {a}'s shift. How many full boxes does it "
    "pack, and how many cans are left over?",
    "Night-shift workers earn ${p} an hour on weeknights and ${q} more an hour on Saturdays. {a} works {h} "
    "hours on each of {z} weeknights and {y} hours on Saturday. How much does {a} earn?",
    "The factory's {w} ovens each use {y} kilowatt-hours of electricity an hour, and a kilowatt-hour "
    "costs {q}0 cents. How many dollars does it cost to run the ovens for {h} hours?",
    "A conveyor belt moves {t} boxes a minute. How many minutes does it take to move {x}0 boxes, rounded "
    "up?",
    "The warehouse had {x}00 crates. Trucks took away {y}0 crates a day for {z} days. How many crates are "
    "left in the warehouse?",
    "A bread factory bakes {x}0 loaves an hour for {h} hours and packs the loaves in bags of {z}. How many "
    "bags does it fill?",
    "{a} paints {y} toy cars every {m} minutes. How many toy cars does {a} paint in a shift of {h} hours?",
    "A roll of steel wire is {x}0 meters long, and each spring needs {z}0 centimeters of wire. How many "
    "springs can the factory make from {w} rolls?",
    "The factory orders {x} sheets of aluminum at ${p} a sheet and pays ${y}0 for the delivery. How much "
    "does the order cost?",
    "Machine A makes {x} parts an hour and machine B makes {y} more parts an hour than machine A. How many "
    "parts do the two machines make in {h} hours?",
    "A clothing factory produced {x}00 shirts in March and {pct}% more shirts in April. How many shirts "
    "did it produce in the two months?",
    "The factory tests {x}0 batches of {t}0 light bulbs, and {q} bulbs in every batch are faulty. How "
    "many good bulbs are there?",
    "{a} packs {slices} cookies in each tin and {w} tins in each carton. How many cookies go into {z} "
    "cartons?",
    "The morning shift starts at {h}:{m} and lasts {w} hours, plus a {y}0-minute lunch break. At what "
    "time does the shift end?",
    "The factory's water tank holds {x}00 liters, and the machines use {y}0 liters an hour. For how many "
    "whole hours can they run on a full tank?",
    "The factory has {x} robot arms, and {q} of them are being repaired. Each working arm welds {y}0 "
    "joints an hour. How many joints are welded in {h} hours?",
    "A toy factory makes {x}0 dolls a day, and each doll needs {z} buttons. Buttons come in bags of {t}0. "
    "How many bags of buttons does the factory need for {w} days, rounded up?",
    "{a} earns ${p} an hour at the factory and worked {hours} hours this week. Every hour past 40 is "
    "overtime, paid at one and a half times the rate. How much did {a} earn this week?",
    "A pallet holds {w} layers of {slices} boxes, and a truck carries {t} pallets. How many boxes do {z} "
    "trucks carry?",
    "A printing press prints {x}00 pages an hour. A catalog has {y}0 pages. How many whole catalogs can "
    "the press print in {h} hours?",
    "Last year the factory built {x}0 tractors. This year it built {pct}% fewer. How many tractors did it "
    "build in the two years together?",
    "{a}, {b} and {c} sort parcels: {a} sorts {x}, {b} sorts twice as many as {a} and {c} sorts {y} fewer "
    "than {b}. How many parcels do the three of them sort?",
    "A new packing machine costs ${x}00 and saves the factory ${p}0 a week. After how many whole weeks "
    "has the machine paid for itself?",
    "The factory builds {x}0 engines a day and inspects {pct}% of them. How many engines are inspected in "
    "{w} days?",
    "A sawmill cuts each log into {z} planks. It cuts {x} logs a day for {t} days, and {y} planks a day "
    "are spoiled. How many good planks does it cut?",
    "Cotton costs ${q} a kilogram and a shirt uses {z}00 grams of cotton. How much does the cotton for "
    "{x}0 shirts cost?",
    "The paint line paints {x} bikes an hour on the day shift and {y} more bikes an hour on the night "
    "shift. Each shift lasts {h} hours. How many bikes are painted in a day?",
    "The factory ships {x}0 boxes a day, and each box weighs {y} kilograms. A truck carries {t}00 "
    "kilograms. How many trucks does the factory need each day, rounded up?",
    "The canteen serves lunch to {x}0 workers on each of {w} days, and each lunch costs the factory ${p}. "
    "How much do the lunches cost?",
    "A candle factory pours {slices} candles from each kilogram of wax. It has {x} kilograms of wax and "
    "sells the candles at ${q} each. How much money do the candles bring in?",
    "{a} has {y}0 parts to check and checks {z} parts every {m} minutes. How many minutes does {a} need to "
    "check them all?",
    "The factory has {w} loading docks, and each dock loads one truck every {m} minutes. How many trucks "
    "are loaded in {h} hours?",
    "Three machines made {s1}, {s2} and {s3} gears in an hour. What was the mean number of gears a machine "
    "made in that hour, rounded down?",
    "A glass factory makes {x}0 bottles an hour, and {q}% of them crack in the kiln. How many bottles "
    "come out whole in {h} hours, rounded down?",
    "Each of the factory's {x} workers gets {z} pairs of gloves a month, and a pair costs ${q}. How much "
    "do the gloves cost the factory in a year?",
    "A production line stops for {y} minutes of cleaning after every {t}0 minutes of work. How many "
    "minutes of cleaning are there in a shift of {h} hours, counting only whole stretches of work?",
    "The factory had {x}0 workers. For {w} months, {z} workers left and {y} new workers joined each "
    "month. How many workers does the factory have now?",
)
# fmt: on


def factory_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of a factory (production lines and shifts, machines, boxes, pallets and
    trucks, inspection and faulty parts, a warehouse, pay and overtime, materials and costs), from
    ``_FACTORY_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_FACTORY_STORY_TEMPLATES, count, seed + 421)


# GSM8K-shaped stories of getting around (``transit-problems``): buses and their stops, trains and
# carriages, trams, ferries, taxis and rental cars, timetables by the clock, passes against single
# tickets, fuel, tolls and parking, luggage; every slot is filled by :func:`_story_values`, and every
# answer stays at or above zero over the slots' ranges.
# fmt: off
_TRANSIT_STORY_TEMPLATES = (
    "A city bus makes {w} trips a day and carries {x} passengers on each trip. How many passengers does "
    "it carry in {z} days?",
    "A train leaves at 7:{m} in the morning, and the journey takes {h} hours and {t} minutes. At what time "
    "does the train arrive?",
    "A monthly bus pass costs ${x} and a single ride costs ${q}. {a} rides the bus {y} times a week. Over "
    "{z} weeks, which costs less, the pass or single rides, and by how much?",
    "A tram has {w} cars, and each car seats {t}0 people with room for {y}0 more standing. How many "
    "people can the tram carry?",
    "{a} cycles {y} kilometers to the station, rides the train for {x} kilometers and walks {z} hundred "
    "meters to the office. How many kilometers is {a}'s journey there and back?",
    "A ferry carries {x} cars on each crossing and makes {h} crossings a day. Each car pays ${p}. How much "
    "does the ferry take in a day?",
    "A bus left the depot with {x}0 passengers. At the first stop {y} got off and {z} got on; at the "
    "second stop {w} got off. How many passengers are on the bus now?",
    "A train ticket costs ${x} for an adult and half as much for a child. How much do {z} adults and {y} "
    "children pay?",
    "A bus route is {x} kilometers long, and the bus averages {t}0 kilometers an hour. How many minutes "
    "does the route take, rounded to the nearest minute?",
    "{a}'s commute takes {m} minutes each way, {w} days a week. How many hours does {a} spend commuting "
    "in {z} weeks?",
    "A subway train has {w} cars with {slices} doors each. At every stop {y} people board through each "
    "door. How many people board the train in {z} stops?",
    "A taxi charges ${q} to start and ${y} for each kilometer. How much does a {x}-kilometer ride cost?",
    "An airport shuttle leaves every {m} minutes from 5 in the morning until {t} in the morning. How "
    "many shuttles leave, counting the first and the last?",
    "A parking garage has {w} floors with {x}0 spaces on each floor. On every floor {q}0 of the spaces "
    "are taken. How many spaces in the garage are free?",
    "A coach uses {y}0 liters of diesel for every 100 kilometers, and diesel costs ${q} a liter. How much "
    "does the diesel for a {x}0-kilometer trip cost?",
    "{a} drives at {t}0 kilometers an hour for {h} hours and then at {y}0 kilometers an hour for {z} "
    "hours. How far does {a} drive in all?",
    "A train has {w} carriages with {t}0 seats each. When it leaves the station, {y} seats in every "
    "carriage are empty. How many passengers are seated on the train?",
    "A bike-share station has {x}0 bikes at 8 in the morning. Every hour until noon, {y} bikes are "
    "taken out and {z} are brought back. How many bikes are at the station at noon?",
    "A coach tour costs ${x}0 a person, with {pct}% off for groups of {t} or more people. A group of "
    "{slices} friends books the tour. How much does the group pay?",
    "A train travels {x}0 kilometers in {h} hours. At the same speed, how many hours does it take to "
    "travel {y}0 kilometers?",
    "An airline lets each passenger check {y}0 kilograms of luggage for free and charges ${p} for each "
    "kilogram above that. {a}'s two suitcases weigh {x} and {t} kilograms. How much does {a} pay for "
    "luggage?",
    "A plane flies {x}00 kilometers at {t}00 kilometers an hour. How long is the flight, in hours and "
    "minutes?",
    "A bus company has {w} buses, and each bus needs {z} drivers a day. A driver earns ${x}0 a day. How "
    "much does the company pay its drivers in {y} days?",
    "{a} can buy a weekly train ticket for ${x} or {w} return tickets at ${p} each. Which is cheaper, and "
    "by how much?",
    "A traffic light stays green for {t}0 seconds, yellow for 5 seconds and red for {m} seconds. How many "
    "full cycles does it go through in {h} hours?",
    "A highway toll is ${q} for a car and ${y} for a truck. Every hour {x}0 cars and {z}0 trucks pass the "
    "toll. How much is collected in {h} hours?",
    "A school bus picks up {y} children at each of its {t} stops and has {x} seats. How many children "
    "have no seat, or how many seats are left over?",
    "{a} rides the metro for {w} stops. The train takes {z} minutes between stops, and {a} waits {m} "
    "minutes on the platform first. How many minutes does the trip take?",
    "A rental car costs ${x} a day plus {q}0 cents a kilometer. {a} rents a car for {z} days and drives "
    "{y}00 kilometers. How much does the rental cost?",
    "A night train leaves at {t}:{m} in the evening and arrives {h} hours and {y}0 minutes later. At what "
    "time does it arrive?",
    "An electric scooter costs ${q} to unlock and {p}0 cents a minute to ride. {a} rides for {m} minutes. "
    "How much does the ride cost?",
    "Each bus holds {x} passengers. How many buses are needed to take {hours}0 fans to the stadium?",
    "A ferry ticket costs ${p} for a foot passenger and ${y} more for a car with its driver. On one "
    "crossing there are {x} foot passengers and {t} cars. How much do the tickets bring in?",
    "A freight train has {x} wagons, and each wagon carries {y}0 tonnes of coal. How many trucks that "
    "carry {z}0 tonnes each would it take to carry the same coal, rounded up?",
    "A bus driver works {h}-hour shifts {z} days a week for ${p} an hour and gets a bonus of ${y}0 a week. "
    "How much does the driver earn in {w} weeks?",
    "{a} took {w} taxi rides this month at ${x} a ride and tipped {pct}% on each. How much did {a} spend "
    "on taxis?",
    "An underground line has {t} stations, each {z} kilometers from the next. How long is the line from "
    "the first station to the last?",
    "A plane has {x} rows of {w} seats, and {q} of the rows are kept for the crew. How many seats are "
    "there for passengers?",
    "{a} saves ${y} a workday by cycling instead of taking the bus. The bike cost ${x}0. After how many "
    "workdays has the bike paid for itself?",
    "A train {y}0 meters long crosses a bridge {x}0 meters long at {t}00 meters a minute. How many "
    "minutes pass from the front of the train reaching the bridge to its back leaving it?",
)
# fmt: on


def transit_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of getting around (buses and trains, trams and ferries, taxis and rental
    cars, timetables, passes and tickets, fuel, tolls, parking and luggage), from
    ``_TRANSIT_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_TRANSIT_STORY_TEMPLATES, count, seed + 433)


# GSM8K-shaped stories of books and reading (``reading-problems``): pages a day, libraries, fines and
# members, bookshelves and bookshops, book clubs and fairs, newspapers and magazines, audiobooks and
# e-readers, printing and typing; every slot is filled by :func:`_story_values`, and every answer stays
# at or above zero over the slots' ranges.
# fmt: off
_READING_STORY_TEMPLATES = (
    "{a} reads {y}0 pages a day. How many days does {a} need to finish a {x}0-page book, rounded up?",
    "A library has {x}00 books and lends out {pct}% of them in a week. How many books are still on the "
    "shelves at the end of the week?",
    "{a} returned {w} library books {y} days late. The fine is {q}0 cents for each book for each day. How "
    "much is the fine?",
    "A bookcase has {w} shelves and each shelf holds {t}0 books. {a} owns {x}0 books. How many more books "
    "could the bookcase hold, or how many of {a}'s books do not fit?",
    "A book club of {t} members meets {z} times a month, and each member brings {q} snacks to every "
    "meeting. How many snacks are brought in {h} months?",
    "{a} bought {w} paperbacks at ${p} each and {z} hardcovers that cost twice as much each. How much did "
    "{a} spend on books?",
    "A novel has {x} chapters of about {y}0 pages each. {a} has read {z} chapters. About how many pages "
    "are left to read?",
    "{a} listens to an audiobook that is {h} hours and {m} minutes long at one and a half times the "
    "normal speed. How many minutes does it take, rounded to the nearest minute?",
    "A newspaper costs ${q} on weekdays and ${p} on Sundays. How much does {a} spend on the newspaper in "
    "{w} weeks?",
    "A magazine comes out {slices} times a year. A year's subscription costs ${x}, and a single issue "
    "costs ${q} in the shop. Which is cheaper over a year, and by how much?",
    "{a} read {s1} pages in the first week of the holidays, {s2} in the second and {s3} in the third. "
    "How many pages did {a} read each week on average, rounded down?",
    "The school library bought {x} new books at ${p} each and got {pct}% off the whole order. How much "
    "did the library pay?",
    "{a} has read {y} books this year and wants to read {x}0 by the end of it, {w} months from now. How "
    "many books a month must {a} read, rounded up?",
    "A printer prints {x}00 copies of a book and packs them {slices} to a box. How many full boxes does it "
    "pack, and how many books are left over?",
    "{a} reads {y} pages every {m} minutes. How many pages does {a} read in {h} hours, rounded down?",
    "A bookshop sold {x} books on Friday, twice as many on Saturday and {y} fewer on Sunday than on "
    "Saturday. How many books did it sell over the three days?",
    "{a} has {x} comic books and {b} has {y} more than {a}. Each of them gives {z} comics to a friend. How "
    "many comics do {a} and {b} have left together?",
    "Library cards cost ${q} for children and ${p} for adults. A family of {z} adults and {y} children "
    "gets cards. How much does the family pay?",
    "An encyclopedia has {w} volumes of {x}0 pages each. {a} reads {slices} pages a day. How many days "
    "does it take to read the whole encyclopedia, rounded up?",
    "The library is open from 9 in the morning to {t} in the evening on weekdays and for {h} hours on "
    "Saturday. How many hours is it open in a week?",
    "{a} writes a story of {x}00 words and types {y}0 words a minute. How many minutes does the typing "
    "take, rounded up?",
    "A second-hand bookshop buys books for ${q} each and sells them for ${p} more than it paid. It sold "
    "{x} books this week. How much profit did it make?",
    "A book of poems has {x} poems, and {a} learns {z} of them by heart each week. How many weeks does it "
    "take {a} to learn half of the poems, rounded up?",
    "The library has {t} rows of bookcases with {w} bookcases in each row. Each bookcase has {z} shelves, "
    "and each shelf holds {y}0 books. How many books fit in the library?",
    "{a} reads {pct}% of a {x}00-page book on Monday and {y} pages on Tuesday. How many pages are left?",
    "Each of the {x} students in a class reads {z} books over the summer, and each book has about {y}0 "
    "pages. About how many pages does the class read?",
    "{a} reads {y} pages on the first day and {z} more pages each day than the day before. How many pages "
    "has {a} read after {w} days?",
    "An e-reader costs ${x}0, and each book costs ${p} less as an e-book than on paper. {a} reads {y} "
    "books a month. After how many whole months has the e-reader paid for itself?",
    "At a book fair, books cost ${p} each or {z} for ${x}. {a} buys {slices} books, in as many bundles of "
    "{z} as possible. How much does {a} pay?",
    "The library's {w} reading rooms each have {slices} tables with {z} chairs around each. On a busy day "
    "{pct}% of the chairs are taken. How many chairs are taken, rounded down?",
    "A book's cover price is ${x}. The shop takes {pct}% off, and {a} pays with two ${bill} notes. How "
    "much change does {a} get?",
    "A box holds {x}0 old books. {a} takes {y}, {b} takes twice as many as {a} and {c} takes {z}. How many "
    "books are left in the box?",
    "{a} delivers newspapers to {x} houses on {z} days a week and earns {q}0 cents a paper. How much does "
    "{a} earn in {w} weeks?",
    "A story-time session at the library lasts {m} minutes, and the librarian reads {z} picture books in "
    "it. About how many minutes does each book take, rounded down?",
    "{a} has to read a {x}0-page book in {t} days but will be too busy to read on {z} of them. How many "
    "pages a day must {a} read on the other days, rounded up?",
    "Printing a book costs ${q} for the cover and {y} cents a page. How much does it cost to print {x}0 "
    "copies of a {t}0-page book?",
    "The library had {x}00 members last year and has {pct}% more this year. How many members does it have "
    "this year?",
    "{a} shelves {y} returned books every {m} minutes. How many minutes does {a} need to shelve {w} carts "
    "of {slices} books each, rounded up to the next minute?",
    "A bookmark costs ${q} and a reading light costs ${p}. {a} buys {z} bookmarks and {w} reading lights "
    "as presents. How much does {a} spend?",
    "{a}'s reading log shows {y} books in January, {z} more in February than in January and twice as many "
    "in March as in February. How many books did {a} read in the three months?",
)
# fmt: on


def reading_problems(count: int, seed: int = 0) -> list[str]:
    """GSM8K-shaped stories of books and reading (pages a day, libraries, fines and members,
    bookshelves and bookshops, book clubs and fairs, newspapers and magazines, audiobooks and
    e-readers, printing and typing), from ``_READING_STORY_TEMPLATES`` (no instruction appended)."""
    return _template_stories(_READING_STORY_TEMPLATES, count, seed + 443)


# Each source's prompts from the seed, in the order they join the pool (the order fixes the seeded
# shuffle, so the committed token stores' pools depend on it). ``math-word-problems`` comes last
# in builtin_prompts: it tops the pool up to ``count``.
_POOL_MAKERS: dict[str, Callable[[int], list[str]]] = {
    "stdlib-functions": lambda seed: stdlib_function_prompts(),
    "coding-tasks": lambda seed: coding_task_prompts(),
    "concepts": lambda seed: concept_prompts(),
    "code-completions": code_completion_prompts,
    "word-problems": lambda seed: word_problems(600, seed),
    "package-completions": lambda seed: package_completion_prompts(),
    "story-problems": lambda seed: story_problems(1200, seed),
    "library-completions": lambda seed: library_completion_prompts(),
    "chain-problems": lambda seed: chain_problems(1000, seed),
    "compare-problems": lambda seed: compare_problems(1000, seed),
    "composed-functions": composed_function_prompts,
    "remainder-problems": lambda seed: remainder_problems(1000, seed),
    "threshold-functions": threshold_function_prompts,
    "growth-problems": lambda seed: growth_problems(1000, seed),
    "text-functions": text_function_prompts,
    "shopping-problems": lambda seed: shopping_problems(1000, seed),
    "rate-problems": lambda seed: rate_problems(1000, seed),
    "measure-problems": lambda seed: measure_problems(1000, seed),
    "schedule-problems": lambda seed: schedule_problems(1000, seed),
    "position-functions": position_function_prompts,
    "digit-functions": digit_function_prompts,
    "pair-functions": pair_function_prompts,
    "mapping-functions": mapping_function_prompts,
    "sentence-functions": sentence_function_prompts,
    "grid-functions": grid_function_prompts,
    "line-functions": line_function_prompts,
    "field-functions": field_function_prompts,
    "tuple-functions": tuple_function_prompts,
    "string-pair-functions": string_pair_function_prompts,
    "number-word-functions": number_word_function_prompts,
    "interval-functions": interval_function_prompts,
    "range-functions": range_function_prompts,
    "paren-functions": paren_function_prompts,
    "fraction-functions": fraction_function_prompts,
    "date-functions": date_function_prompts,
    "version-functions": version_function_prompts,
    "time-functions": time_function_prompts,
    "portion-problems": lambda seed: portion_problems(1000, seed),
    "money-functions": money_function_prompts,
    "path-functions": path_function_prompts,
    "binary-functions": binary_function_prompts,
    "average-problems": lambda seed: average_problems(1000, seed),
    "identifier-functions": identifier_function_prompts,
    "color-functions": color_function_prompts,
    "email-functions": email_function_prompts,
    "people-functions": people_function_prompts,
    "sequence-functions": sequence_function_prompts,
    "relation-problems": lambda seed: relation_problems(1000, seed),
    "stock-functions": stock_function_prompts,
    "score-problems": lambda seed: score_problems(1000, seed),
    "log-functions": log_function_prompts,
    "farm-problems": lambda seed: farm_problems(1000, seed),
    "url-functions": url_function_prompts,
    "pay-problems": lambda seed: pay_problems(1000, seed),
    "school-problems": lambda seed: school_problems(1000, seed),
    "ip-functions": ip_function_prompts,
    "point-functions": point_function_prompts,
    "card-functions": card_function_prompts,
    "trip-problems": lambda seed: trip_problems(1000, seed),
    "kitchen-problems": lambda seed: kitchen_problems(1000, seed),
    "chess-functions": chess_function_prompts,
    "garden-problems": lambda seed: garden_problems(1000, seed),
    "note-functions": note_function_prompts,
    "craft-problems": lambda seed: craft_problems(1000, seed),
    "size-functions": size_function_prompts,
    "party-problems": lambda seed: party_problems(1000, seed),
    "pet-problems": lambda seed: pet_problems(1000, seed),
    "temperature-functions": temperature_function_prompts,
    "distance-functions": distance_function_prompts,
    "percent-functions": percent_function_prompts,
    "seat-functions": seat_function_prompts,
    "ingredient-functions": ingredient_function_prompts,
    "match-functions": match_function_prompts,
    "dice-functions": dice_function_prompts,
    "grade-functions": grade_function_prompts,
    "compass-functions": compass_function_prompts,
    "home-problems": lambda seed: home_problems(1000, seed),
    "phone-functions": phone_function_prompts,
    "formula-functions": formula_function_prompts,
    "sport-problems": lambda seed: sport_problems(1000, seed),
    "roman-functions": roman_function_prompts,
    "weather-problems": lambda seed: weather_problems(1000, seed),
    "isbn-functions": isbn_function_prompts,
    "music-problems": lambda seed: music_problems(1000, seed),
    "dna-functions": dna_function_prompts,
    "factory-problems": lambda seed: factory_problems(1000, seed),
    "password-functions": password_function_prompts,
    "transit-problems": lambda seed: transit_problems(1000, seed),
    "plate-functions": plate_function_prompts,
    "reading-problems": lambda seed: reading_problems(1000, seed),
    "tag-functions": tag_function_prompts,
}
# Every built-in source's name: the default mix first, then the others in pool order.
SOURCES = (*DEFAULT_SOURCES, *(source for source in _POOL_MAKERS if source not in DEFAULT_SOURCES))


def builtin_prompts(
    count: int | None = None, seed: int = 0, sources: Sequence[str] = DEFAULT_SOURCES
) -> list[str]:
    """A shuffled, de-duplicated mix of the built-in prompt sources (see module doc)."""
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise ValueError(f"prompt sources {unknown} are invalid; expected some of {SOURCES}")
    pool: list[str] = []
    for source, make in _POOL_MAKERS.items():
        if source in sources:
            pool += make(seed)
    if "math-word-problems" in sources:
        pool += math_word_problems(max(1000, (count or 0) - len(pool)), seed)
    pool = list(dict.fromkeys(pool))
    random.Random(seed).shuffle(pool)
    return pool[:count] if count else pool


def read_prompts(path: str) -> list[str]:
    """Prompts from a JSONL file with a "prompt" field per line."""
    prompts = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                record = json.loads(line)
                if not isinstance(record.get("prompt"), str):
                    raise ValueError(f'{path}:{n}: expected a JSON object with a string "prompt" field')
                prompts.append(record["prompt"])
    return prompts


def _shingles(text: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def overlapping_prompts(train: Iterable[str], evaluation: Iterable[str], n: int = 12) -> list[str]:
    """Training prompts equal to an evaluation prompt or sharing an ``n``-word run with one."""
    eval_list = list(evaluation)
    exact = set(eval_list)
    eval_shingles = set().union(*(_shingles(e, n) for e in eval_list)) if eval_list else set()
    return [t for t in train if t in exact or _shingles(t, n) & eval_shingles]


def chat_prompt_ids(tokenizer, prompt: str) -> list[int]:
    """Token ids of a user turn with the generation prompt (plain encoding without a chat template)."""
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True
        )
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    return tokenizer.encode(prompt)


def left_padded(prompts: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded input ids and attention mask [bs, max_len] of a batch of prompts (HF generate's layout)."""
    width = max(map(len, prompts))
    ids = torch.tensor([[pad_id] * (width - len(p)) + list(p) for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


def generate_padded(
    target: torch.nn.Module,
    ids: torch.Tensor,
    mask: torch.Tensor,
    max_new_tokens: int,
    eos_token_id: int | None,
    temperature: float = 0.0,
) -> torch.Tensor:
    """``target.generate`` over a left-padded batch: greedy at temperature 0, plain sampling otherwise.

    Returns [bs, width + generated] ids; rows that stop early are padded with the eos token.
    """
    return target.generate(
        ids,
        attention_mask=mask,
        max_new_tokens=max_new_tokens,
        do_sample=temperature > 0,
        temperature=temperature if temperature > 0 else None,
        top_p=None,
        top_k=None,
        eos_token_id=eos_token_id,
        pad_token_id=eos_token_id if eos_token_id is not None else 0,
    )


def trim_at_eos(response: list[int], eos_token_id: int | None) -> list[int]:
    """``response`` up to and including its first eos (generate pads finished rows with eos)."""
    if eos_token_id is not None and eos_token_id in response:
        return response[: response.index(eos_token_id) + 1]
    return response


@torch.inference_mode()
def generate_batch(
    target: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    eos_token_id: int | None,
    temperature: float = 0.0,
) -> list[list[int]]:
    """The target's responses to one left-padded batch of prompts, each cut after its first eos."""
    width = max(map(len, prompts))
    ids, mask = left_padded(prompts)
    out = generate_padded(target, ids, mask, max_new_tokens, eos_token_id, temperature)
    return [trim_at_eos(row, eos_token_id) for row in out[:, width:].tolist()]


@torch.inference_mode()
def generate_responses_hf(
    target: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    eos_token_id: int | None,
    temperature: float = 0.0,
    batch_size: int = 16,
    seed: int = 0,
) -> Iterator[dict]:
    """Self-distillation with Hugging Face generate (CPU-friendly); yields training records."""
    torch.manual_seed(seed)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))  # similar lengths pad less
    for start in tqdm(range(0, len(order), batch_size), desc="generating", unit="batch"):
        chunk = [list(prompts[i]) for i in order[start : start + batch_size]]
        responses = generate_batch(target, chunk, max_new_tokens, eos_token_id, temperature)
        for prompt, response in zip(chunk, responses):
            yield {"input_ids": prompt + response, "loss_start": len(prompt)}


def generate_responses_sglang(
    model_path: str,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    temperature: float = 0.0,
    engine_kwargs: dict | None = None,
) -> Iterator[dict]:
    """Self-distillation with ``sglang.Engine`` (GPU host); yields training records."""
    import sglang

    engine = sglang.Engine(model_path=model_path, **(engine_kwargs or {}))
    try:
        params = {"max_new_tokens": max_new_tokens, "temperature": temperature}
        outputs = engine.generate(input_ids=[list(p) for p in prompts], sampling_params=params)
        for prompt, out in zip(prompts, outputs):
            yield {"input_ids": list(prompt) + list(out["output_ids"]), "loss_start": len(prompt)}
    finally:
        engine.shutdown()


def write_records(records: Iterable[dict], path: str) -> int:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
            count += 1
    return count


def read_records(path: str) -> list[dict]:
    records = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            ids, start = record.get("input_ids"), record.get("loss_start")
            if not isinstance(ids, list) or not isinstance(start, int) or not 0 < start < len(ids):
                raise ValueError(
                    f'{path}:{n}: expected {{"input_ids": [...], "loss_start": k}} '
                    "with 0 < k < len(input_ids)"
                )
            records.append(record)
    if not records:
        raise ValueError(f"{path} holds no training records")
    return records
