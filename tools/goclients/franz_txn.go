package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnRecords is how many records franz-go's transactional session copies.
const txnRecords = 300

// runFranzTransactions runs franz-go's transactional session: TOPIC-in gets txnRecords plain
// records, a GroupTransactSession (a consumer group reading committed data, a transactional
// producer, the group's offsets committed in each transaction) copies them upper-cased to
// TOPIC-out, and a transaction of other records there is aborted. A read_committed consumer
// must then find every copy exactly once and nothing aborted.
func runFranzTransactions(broker, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	seeds, err := franzBroker(broker)
	if err != nil {
		return err
	}
	input, output := topic+"-in", topic+"-out"
	admin, err := kgo.NewClient(seeds...)
	if err != nil {
		return err
	}
	defer admin.Close()
	created, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, input, output)
	if err != nil {
		return err
	}
	if err := created.Error(); err != nil {
		return err
	}
	for i := 0; i < txnRecords; i++ {
		record := &kgo.Record{Topic: input, Value: []byte(fmt.Sprintf("copy-%d", i))}
		if err := admin.ProduceSync(ctx, record).FirstErr(); err != nil {
			return err
		}
	}

	session, err := kgo.NewGroupTransactSession(append(seeds,
		kgo.TransactionalID(topic+"-session"),
		kgo.ConsumerGroup(topic+"-group"),
		kgo.ConsumeTopics(input),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic(output),
	)...)
	if err != nil {
		return err
	}
	copied := 0
	for copied < txnRecords {
		fetches := session.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			session.Close()
			return err
		}
		if err := session.Begin(); err != nil {
			session.Close()
			return err
		}
		batch := 0
		fetches.EachRecord(func(record *kgo.Record) {
			session.Produce(ctx, &kgo.Record{Value: []byte(strings.ToUpper(string(record.Value)))}, nil)
			batch++
		})
		committed, err := session.End(ctx, kgo.TryCommit)
		if err != nil {
			session.Close()
			return err
		}
		if committed {
			copied += batch
		}
	}
	session.Close()

	aborting, err := kgo.NewClient(append(seeds, kgo.TransactionalID(topic+"-aborting"), kgo.DefaultProduceTopic(output))...)
	if err != nil {
		return err
	}
	if err := aborting.BeginTransaction(); err != nil {
		return err
	}
	for i := 0; i < 10; i++ {
		if err := aborting.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("aborted-%d", i))}).FirstErr(); err != nil {
			return err
		}
	}
	if err := aborting.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return err
	}
	aborting.Close()

	reader, err := kgo.NewClient(append(seeds,
		kgo.ConsumeTopics(output),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return err
	}
	defer reader.Close()
	seen := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < txnRecords && time.Now().Before(deadline) {
		pollCtx, pollCancel := context.WithTimeout(ctx, time.Second)
		fetches := reader.PollFetches(pollCtx)
		pollCancel()
		fetches.EachRecord(func(record *kgo.Record) { seen[string(record.Value)]++ })
	}
	for i := 0; i < txnRecords; i++ {
		value := fmt.Sprintf("COPY-%d", i)
		if seen[value] != 1 {
			return fmt.Errorf("%s read %d times", value, seen[value])
		}
	}
	if len(seen) != txnRecords {
		return fmt.Errorf("read %d distinct records, not %d: an aborted one is visible", len(seen), txnRecords)
	}
	fmt.Printf("franz transactions: %d records copied exactly once, the aborted ones unseen\n", txnRecords)
	return nil
}
