package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const defaultURL = "amqp://guest:guest@127.0.0.1:5672/"

const publishAbout = `Declares QUEUE (durable; it is created if missing) and publishes each
MESSAGE argument, or each line of standard input when there is none, with
publisher confirms. It waits for every confirm and prints how many were
confirmed. Exit status 1 if any publish was nacked (definitely not stored)
or its outcome stayed unknown (the connection dropped first).

Example:
  sluice publish orders hello world
  seq 1000 | sluice publish orders
`

func runPublish(args []string, e env) int {
	c := newCommand("sluice publish", "sluice publish [--url URL] QUEUE [MESSAGE...]", publishAbout)
	url := c.fs.String("url", defaultURL, "the broker's AMQP URL")
	timeout := c.fs.Duration("timeout", 30*time.Second, "give up waiting for confirms after this long")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) < 1 {
		return c.fail(e, "name the queue")
	}
	queue, msgs := pos[0], pos[1:]
	conn, ch, err := openChannel(*url, queue)
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice publish: %v\n", err)
		return 1
	}
	defer conn.Close()
	if err := ch.Confirm(false); err != nil {
		fmt.Fprintf(e.stderr, "sluice publish: confirm.select: %v\n", err)
		return 1
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1024))
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	sent, acked, nacked := 0, 0, 0
	// Confirms are read as they come, so that the channel never fills.
	drain := func(block bool) error {
		for {
			if !block {
				select {
				case cf, ok := <-confirms:
					if !ok {
						return errors.New("the connection closed: outcomes unknown")
					}
					if cf.Ack {
						acked++
					} else {
						nacked++
					}
					continue
				default:
					return nil
				}
			}
			if acked+nacked == sent {
				return nil
			}
			select {
			case cf, ok := <-confirms:
				if !ok {
					return errors.New("the connection closed: outcomes unknown")
				}
				if cf.Ack {
					acked++
				} else {
					nacked++
				}
			case <-ctx.Done():
				return fmt.Errorf("no confirm within %v", *timeout)
			}
		}
	}
	pub := func(body []byte) error {
		if err := ch.PublishWithContext(ctx, "", queue, false, false,
			amqp.Publishing{DeliveryMode: amqp.Persistent, Body: body}); err != nil {
			return err
		}
		sent++
		return drain(false)
	}
	if len(msgs) > 0 {
		for _, m := range msgs {
			if err = pub([]byte(m)); err != nil {
				break
			}
		}
	} else {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for err == nil && sc.Scan() {
			err = pub(append([]byte(nil), sc.Bytes()...))
		}
		if err == nil {
			err = sc.Err()
		}
	}
	if err == nil {
		err = drain(true)
	}
	fmt.Fprintf(e.stdout, "published %d, confirmed %d, nacked %d\n", sent, acked, nacked)
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice publish: %v (%d outcomes unknown)\n", err, sent-acked-nacked)
		return 1
	}
	if nacked > 0 {
		return 1
	}
	return 0
}

const consumeAbout = `Declares QUEUE (durable; it is created if missing), consumes its messages
and prints each body on a line of its own, acknowledging each once printed.
It stops after --count messages, after --idle without a message, or at
Ctrl-C.

Example:
  sluice consume --count 2 orders
`

func runConsume(args []string, e env) int {
	c := newCommand("sluice consume", "sluice consume [--url URL] [--count N] [--prefetch P] [--idle D] QUEUE", consumeAbout)
	url := c.fs.String("url", defaultURL, "the broker's AMQP URL")
	count := c.fs.Int("count", 0, "stop after this many messages (0: no limit)")
	prefetch := c.fs.Int("prefetch", 100, "unacknowledged messages the broker may send ahead")
	idle := c.fs.Duration("idle", 0, "stop after this long without a message (0: never)")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) != 1 {
		return c.fail(e, "name one queue")
	}
	if *count < 0 || *prefetch < 1 || *prefetch > 65535 {
		return c.fail(e, "--count must be 0 or more and --prefetch 1 to 65535")
	}
	conn, ch, err := openChannel(*url, pos[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice consume: %v\n", err)
		return 1
	}
	defer conn.Close()
	if err := ch.Qos(*prefetch, 0, false); err != nil {
		fmt.Fprintf(e.stderr, "sluice consume: basic.qos: %v\n", err)
		return 1
	}
	msgs, err := ch.Consume(pos[0], "", false, false, false, false, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice consume: %v\n", err)
		return 1
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	var idleC <-chan time.Time
	for n := 0; *count == 0 || n < *count; n++ {
		if *idle > 0 {
			idleC = time.After(*idle)
		}
		select {
		case d, ok := <-msgs:
			if !ok {
				fmt.Fprintf(e.stderr, "sluice consume: the connection closed\n")
				return 1
			}
			w.Write(d.Body)
			w.WriteByte('\n')
			if err := w.Flush(); err != nil {
				return 1
			}
			if err := d.Ack(false); err != nil {
				fmt.Fprintf(e.stderr, "sluice consume: ack: %v\n", err)
				return 1
			}
		case <-idleC:
			return 0
		case <-e.interrupt:
			return 130
		}
	}
	return 0
}

// openChannel connects, opens a channel and declares queue on it.
func openChannel(url, queue string) (*amqp.Connection, *amqp.Channel, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return nil, nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("queue.declare %s: %w", queue, err)
	}
	return conn, ch, nil
}
