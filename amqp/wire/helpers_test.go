package wire

import (
	"fmt"
	"math"
	"reflect"
)

// allMethods returns a zero value of every method the codec decodes, in id
// order, by asking the registry for every id pair the spec could use.
func allMethods() []Method {
	var out []Method
	for _, c := range []uint16{ClassConnection, ClassChannel, ClassExchange, ClassQueue, ClassBasic, ClassTx, ClassConfirm} {
		for id := uint16(0); id < 200; id++ {
			if m := newMethod(c, id); m != nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// sampleTable holds every field type, nested tables and arrays, and values
// at the edges of their ranges.
func sampleTable() Table {
	return Table{
		{"bool-true", true},
		{"bool-false", false},
		{"int8", int8(-128)},
		{"uint8", uint8(255)},
		{"int16", int16(-32768)},
		{"uint16", uint16(65535)},
		{"int32", int32(math.MinInt32)},
		{"uint32", uint32(math.MaxUint32)},
		{"int64", int64(math.MinInt64)},
		{"float32", float32(-1.5)},
		{"float64", math.Pi},
		{"decimal", Decimal{Scale: 2, Value: -12345}},
		{"longstr", "héllo\x00world"},
		{"empty-longstr", ""},
		{"bytes", []byte{0, 1, 2, 0xCE}},
		{"empty-bytes", []byte{}},
		{"timestamp", Timestamp(1700000000)},
		{"void", nil},
		{"array", Array{int32(1), "two", Array{true, nil}, Table{{"in-array", uint16(7)}}}},
		{"table", Table{{"x-death", Array{Table{{"count", int64(3)}, {"queue", "q1"}}}}}},
		{"", "empty name"},
	}
}

// fill sets every exported field of the struct m points to from variant k:
// strings and numbers distinct per field, bools as the bits of k, tables
// sampleTable (or nil for odd k), so that variants over k = 0..31 cover
// every combination of up to five bit fields.
func fill(m Method, k int) Method {
	v := reflect.ValueOf(m).Elem()
	bitIndex := 0
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		name := v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("%s-%d", name, k))
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			// Values near the top of the range, varying per field and k,
			// so byte order mistakes show.
			bits := f.Type().Bits()
			f.SetUint((uint64(1)<<(bits-1) | uint64(0x5A+i+k)) & (1<<bits - 1))
		case reflect.Bool:
			f.SetBool(k>>bitIndex&1 == 1)
			bitIndex++
		case reflect.Slice: // Table
			if k%2 == 0 {
				f.Set(reflect.ValueOf(sampleTable()))
			}
		default:
			panic("fill: unexpected field kind " + f.Kind().String())
		}
	}
	return m
}

// fresh returns a new zero value of m's type.
func fresh(m Method) Method {
	c, id := m.ID()
	return newMethod(c, id)
}

func mustAppendMethod(m Method) []byte {
	b, err := AppendMethod(nil, m)
	if err != nil {
		panic(err)
	}
	return b
}

func sampleHeader() ContentHeader {
	return ContentHeader{
		ClassID:  ClassBasic,
		BodySize: 1<<40 + 7,
		Properties: Properties{
			Flags:           flagsDefined,
			ContentType:     "application/json",
			ContentEncoding: "gzip",
			Headers:         sampleTable(),
			DeliveryMode:    2,
			Priority:        9,
			CorrelationID:   "corr",
			ReplyTo:         "amq.rabbitmq.reply-to",
			Expiration:      "60000",
			MessageID:       "msg-1",
			Timestamp:       1700000001,
			Type:            "order.created",
			UserID:          "guest",
			AppID:           "app",
			Reserved:        "cluster",
		},
	}
}
