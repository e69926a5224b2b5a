package route

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzTopicMatch compares TopicMatch with the brute-force reference. The
// reference is exponential in the number of "#", so inputs are bounded
// to a few words and hashes.
func FuzzTopicMatch(f *testing.F) {
	for _, c := range topicCases {
		if len(c.pattern) < 40 && len(c.key) < 40 {
			f.Add(c.pattern, c.key)
		}
	}
	f.Fuzz(func(t *testing.T, pattern, key string) {
		if strings.Count(pattern, ".") > 12 || strings.Count(key, ".") > 16 ||
			strings.Count(pattern, "#") > 5 || len(pattern) > 64 || len(key) > 64 {
			t.Skip()
		}
		if got, want := TopicMatch(pattern, key), refTopicMatch(pattern, key); got != want {
			t.Fatalf("TopicMatch(%q, %q) = %t, reference %t", pattern, key, got, want)
		}
	})
}

// FuzzDecodeFields checks that only canonical encodings decode: what
// decodes re-encodes to the same bytes and passes CheckFields, and every
// refusal wraps ErrDecode.
func FuzzDecodeFields(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{})
	f.Add(AppendFields(nil, []Field{fs("a", "x"), fn("n", "1"), fv("v")}))
	f.Add(AppendFields(nil, []Field{fs(XMatch, "any"), fb("b", true), fn("d", "-0.5"), fo("o", "\x00"), fn("x", "1e-254"), fn("y", "0x1p-1074"), fn("z", "nan")}))
	f.Add([]byte{1, 1, 'a', byte(ClassNumber), 3, '1', '.', '0'})
	f.Add([]byte{0x81, 0x00, 1, 'a', byte(ClassString), 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := DecodeFields(b)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("DecodeFields(%x) = %v, not ErrDecode", b, err)
			}
			return
		}
		if again := AppendFields(nil, fs); !bytes.Equal(again, b) {
			t.Fatalf("DecodeFields(%x) = %s, which encodes as %x", b, FieldsText(fs), again)
		}
		if err := CheckFields(fs); err != nil {
			t.Fatalf("DecodeFields(%x) = %s, which CheckFields refuses: %v", b, FieldsText(fs), err)
		}
		_ = FieldsText(fs)
		HeadersMatch(fs, fs)
	})
}
