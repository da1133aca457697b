package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// franzBroker is how franz-go clients reach the broker: its address; TLS when FERROLOG_TLS_CA
// names a PEM file of the certificates to trust (with FERROLOG_TLS_CERT and FERROLOG_TLS_KEY as
// the client's certificate, if set); and, when FERROLOG_SASL=MECHANISM:USER:PASSWORD is set, the
// SASL mechanism to authenticate with.
func franzBroker(broker string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(broker)}
	if config, err := tlsConfig(); err != nil {
		return nil, err
	} else if config != nil {
		opts = append(opts, kgo.DialTLSConfig(config))
	}
	mechanism, user, password, ok := saslSettings()
	if !ok {
		return opts, nil
	}
	switch mechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("unknown SASL mechanism %q", mechanism)
	}
	return opts, nil
}

func franzCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func runFranz(broker, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seeds, err := franzBroker(broker)
	if err != nil {
		return err
	}
	admin, err := kgo.NewClient(seeds...)
	if err != nil {
		return err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	created, err := adm.CreateTopics(ctx, 3, 1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if err := created.Error(); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	// A new topic reaches every broker's metadata a moment after CreateTopics answers
	// (Kafka's KRaft brokers learn it from the controller), so the list is asked again.
	if err := eventually(func() error {
		listed, err := adm.ListTopics(ctx)
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		if details, ok := listed[topic]; !ok || len(details.Partitions) != 3 {
			return fmt.Errorf("topic list: %v", listed.Names())
		}
		return nil
	}); err != nil {
		return err
	}

	produced := expected(topic)
	for index, codec := range codecs {
		producer, err := kgo.NewClient(append(seeds, kgo.ProducerBatchCompression(franzCodec(codec)))...)
		if err != nil {
			return err
		}
		var batch []*kgo.Record
		for _, r := range produced[index*perCodec : (index+1)*perCodec] {
			batch = append(batch, &kgo.Record{Topic: topic, Key: []byte(r.key), Value: []byte(r.value)})
		}
		err = producer.ProduceSync(ctx, batch...).FirstErr()
		producer.Close()
		if err != nil {
			return fmt.Errorf("produce %s: %w", codec, err)
		}
	}

	group := topic + "-group"
	consumer, err := kgo.NewClient(append(seeds,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)...)
	if err != nil {
		return err
	}
	var consumed []record
	for len(consumed) < len(produced) {
		fetches := consumer.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			consumer.Close()
			return fmt.Errorf("fetch: %v", errs)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			consumed = append(consumed, record{string(r.Key), string(r.Value)})
		})
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		consumer.Close()
		return fmt.Errorf("commit: %w", err)
	}
	consumer.Close()
	if err := sameRecords(produced, consumed); err != nil {
		return err
	}

	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("fetch offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("end offsets: %w", err)
	}
	var total int64
	var mismatch error
	ends.Each(func(end kadm.ListedOffset) {
		offset, ok := committed.Lookup(topic, end.Partition)
		if !ok || offset.At != end.Offset {
			mismatch = fmt.Errorf("partition %d: committed %v, end %d", end.Partition, offset.At, end.Offset)
		}
		total += end.Offset
	})
	if mismatch != nil {
		return mismatch
	}
	fmt.Printf("franz-go: produced %d, consumed %d, committed %d\n", len(produced), len(consumed), total)
	return nil
}
