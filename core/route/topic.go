package route

import "strings"

// TopicMatch reports whether the topic pattern matches key: both are
// words separated by '.', "*" in pattern matches one word of key, "#"
// zero or more, any other word only itself. Empty words are words ("a..b"
// has three), but "" has none, as RabbitMQ splits a topic: "#" matches
// "", "*" and "." do not.
//
// It is glob matching over words ("#" the star, "*" the single-character
// wildcard), done greedily: a "#" first matches no word, and on a later
// mismatch the match resumes after the latest "#" with it taking one key
// word more. Going back only to the latest "#" is enough: whatever an
// earlier "#" would have taken instead, the latest one can take as well,
// since it matches any run of words. The key word a resumption starts
// from only moves forward, one word per resumption, so there are at most
// as many resumptions as key words, each followed by at most one pass
// over the pattern: O(pattern words × key words) word comparisons in
// constant memory, where a recursive matcher is exponential in the number
// of "#". Words are walked by offset (a word starts at its offset and ends
// at the next '.' or the end; the word after the last starts at
// len(s)+1), so nothing is allocated.
func TopicMatch(pattern, key string) bool {
	switch {
	case key == "":
		return hashesOnly(pattern, 0)
	case pattern == "":
		return false
	}
	p, k := 0, 0 // offsets of the next pattern word and the next key word
	// resumeP is the offset of the pattern word after the latest "#" (-1
	// before any), and resumeK the offset of the key word that "#" was
	// last tried to end before.
	resumeP, resumeK := -1, 0
	for k <= len(key) {
		if p <= len(pattern) {
			pe := wordEnd(pattern, p)
			w := pattern[p:pe]
			if w == "#" {
				p = pe + 1
				resumeP, resumeK = p, k
				continue
			}
			ke := wordEnd(key, k)
			if w == "*" || w == key[k:ke] {
				p, k = pe+1, ke+1
				continue
			}
		}
		if resumeP < 0 {
			return false
		}
		// The latest "#" takes one key word more (resumeK <= k <=
		// len(key), so there is one), and the match resumes after it.
		resumeK = wordEnd(key, resumeK) + 1
		p, k = resumeP, resumeK
	}
	// Every key word is matched: what is left of the pattern must match
	// no words, so must be "#" only.
	return hashesOnly(pattern, p)
}

// hashesOnly reports whether the words of pattern from offset p on are
// all "#" (true for none: p past the end, or the empty pattern).
func hashesOnly(pattern string, p int) bool {
	if pattern == "" {
		return true
	}
	for p <= len(pattern) {
		pe := wordEnd(pattern, p)
		if pattern[p:pe] != "#" {
			return false
		}
		p = pe + 1
	}
	return true
}

// wordEnd returns the end offset of the word of s starting at offset i
// (i <= len(s)): the next '.' at or after i, or len(s).
func wordEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '.'); j >= 0 {
		return i + j
	}
	return len(s)
}
