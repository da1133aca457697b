package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runFranzGroupProtocol consumes topic in group with Kafka 4's consumer group protocol
// (KIP-848: the broker assigns), the server assignor named by assignor ("uniform" or "range";
// franz-go names it after its balancer) and, unless instance is "-", that group.instance.id.
// It prints "R value" for each record, flushed, then commits those records synchronously
// before the next poll may rebalance. It runs until SIGTERM, then leaves the group.
func runFranzGroupProtocol(broker, topic, group, assignor, instance string) error {
	seeds, err := franzBroker(broker)
	if err != nil {
		return err
	}
	balancer := kgo.StickyBalancer()
	if assignor == "range" {
		balancer = kgo.RangeBalancer()
	}
	opts := append(seeds,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(),
		kgo.Balancers(balancer),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
	)
	if instance != "-" {
		opts = append(opts, kgo.InstanceID(instance))
	}
	consumer, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	for ctx.Err() == nil {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			fmt.Fprintf(os.Stderr, "fetch %s[%d]: %v\n", topic, partition, err)
		})
		records := fetches.Records()
		for _, r := range records {
			fmt.Fprintf(out, "R %s\n", r.Value)
		}
		out.Flush()
		if len(records) > 0 {
			if err := consumer.CommitRecords(context.Background(), records...); err != nil {
				fmt.Fprintf(os.Stderr, "commit: %v\n", err)
			}
		}
		consumer.AllowRebalance()
	}
	consumer.AllowRebalance()
	consumer.Close()
	return nil
}
