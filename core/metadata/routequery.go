package metadata

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicemq/sluice/core/route"
)

// RouteQuery is what a route request (seam.ReqRoute) asks: the queues a
// message published to Exchange with routing key Key and Headers reaches.
// MinApplied: answer only from metadata applied at least this far (the
// index of a binding or declaration the asker saw committed), so that a
// publish after a bind-ok routes by that binding on any broker.
type RouteQuery struct {
	Exchange   string
	Key        string
	Headers    []route.Field
	MinApplied uint64
}

// routeQueryVersion is the route query codec's version byte.
const routeQueryVersion = 1

// RouteQueryBytesMax bounds an encoded query.
const RouteQueryBytesMax = 4 + 2*(binary.MaxVarintLen16+255) + binary.MaxVarintLen64 + route.FieldsBytesMax

// AppendRouteQuery appends q's encoding: the version, the exchange and key
// as length-prefixed strings, the index, then the headers
// (route.AppendFields).
func AppendRouteQuery(dst []byte, q *RouteQuery) []byte {
	dst = append(dst, routeQueryVersion)
	dst = appendStr(dst, q.Exchange)
	dst = appendStr(dst, q.Key)
	dst = binary.AppendUvarint(dst, q.MinApplied)
	return route.AppendFields(dst, q.Headers)
}

// DecodeRouteQuery reads a query exactly.
func DecodeRouteQuery(b []byte) (RouteQuery, error) {
	if len(b) > RouteQueryBytesMax {
		return RouteQuery{}, fmt.Errorf("%w: route query of %d bytes, over %d", ErrDecode, len(b), RouteQueryBytesMax)
	}
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != routeQueryVersion {
		return RouteQuery{}, fmt.Errorf("%w: route query version %d, want %d", ErrDecode, v, routeQueryVersion)
	}
	q := RouteQuery{Exchange: r.str(ExchangeNameBytesMax), Key: r.str(RoutingKeyBytesMax), MinApplied: r.uvarint()}
	if r.err != nil {
		return RouteQuery{}, fmt.Errorf("%w: route query: %v", ErrDecode, r.err)
	}
	hs, err := route.DecodeFields(r.b)
	if err != nil {
		return RouteQuery{}, fmt.Errorf("%w: route query headers: %v", ErrDecode, err)
	}
	q.Headers = hs
	return q, nil
}

// AppendRouted appends the answer to a route query: the count of queue
// names, then each as a length-prefixed string.
func AppendRouted(dst []byte, names []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, n := range names {
		dst = appendStr(dst, n)
	}
	return dst
}

// DecodeRouted reads a route answer exactly; names are appended to dst.
func DecodeRouted(dst []string, b []byte) ([]string, error) {
	r := reader{b: b}
	n := r.count(QueuesMax)
	for range n {
		s := r.str(QueueNameBytesMax)
		if r.err != nil {
			break
		}
		dst = append(dst, s)
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.b)))
	}
	if r.err != nil {
		return dst, fmt.Errorf("%w: route answer: %v", ErrDecode, r.err)
	}
	return dst, nil
}
