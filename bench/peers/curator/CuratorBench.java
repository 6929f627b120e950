// The benchmark of Apache Curator's lock recipes under the load of
// examples/bench, for scripts/bench-peers.sh. Compiled at run time against
// Debian's jars (libcurator-recipes-java, zookeeper), see bench/README.md:
//
//   java -cp CLASSPATH CuratorBench SERVERS RECIPE CLIENTS CYCLES
//
// RECIPE: mutex (InterProcessMutex), semmutex (InterProcessSemaphoreMutex),
// write / read (InterProcessReadWriteLock's write and read lock). CLIENTS
// sessions (one CuratorFramework each) each do CYCLES acquire/release rounds
// on one lock path with an empty critical section, all starting together
// once every session is connected. Stdout gets exactly one line:
//
//   curator RECIPE clients=N cycles=M secs=S handoffs_per_s=X p50_ms=A p99_ms=B violations=V
//
// p50 and p99 are of the time acquire takes; violations counts rounds in
// which a holder of an exclusive lock found another holder inside (it must
// be 0; read locks are shared and not checked).

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorBench {
    private static final int SESSION_TIMEOUT_MS = 30_000; // as examples/bench's default

    public static void main(String[] args) throws Exception {
        if (args.length != 4 && args.length != 5) {
            System.err.println("usage: CuratorBench SERVERS mutex|semmutex|write|read CLIENTS CYCLES [THREADS]");
            System.exit(2);
        }
        String servers = args[0], recipe = args[1];
        int clients = Integer.parseInt(args[2]), cycles = Integer.parseInt(args[3]);
        // THREADS > 1: each client's threads share its CuratorFramework and
        // one lock object (InterProcessMutex counts per thread: each thread
        // is its own contender); mutex only.
        int threadsPer = args.length == 5 ? Integer.parseInt(args[4]) : 1;
        if (threadsPer < 1 || threadsPer > 1 && !recipe.equals("mutex")) {
            System.err.println("CuratorBench: THREADS must be at least 1, and above 1 only for mutex");
            System.exit(2);
        }
        if (!List.of("mutex", "semmutex", "write", "read").contains(recipe)) {
            System.err.println("CuratorBench: unknown recipe " + recipe + " (want mutex, semmutex, write or read)");
            System.exit(2);
        }
        if (clients < 1 || cycles < 1) {
            System.err.println("CuratorBench: CLIENTS and CYCLES must be at least 1");
            System.exit(2);
        }
        String path = "/bench-curator-" + recipe + "-" + System.nanoTime();

        List<CuratorFramework> sessions = new ArrayList<>();
        List<InterProcessLock> locks = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CuratorFramework c = CuratorFrameworkFactory.newClient(servers, SESSION_TIMEOUT_MS, 15_000,
                    new RetryNTimes(3, 100));
            c.start();
            if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("session " + i + " did not connect to " + servers);
            }
            sessions.add(c);
            InterProcessLock shared = lock(c, recipe, path);
            for (int k = 0; k < threadsPer; k++) {
                locks.add(shared);
            }
        }
        boolean exclusive = !recipe.equals("read");

        AtomicInteger inside = new AtomicInteger(), violations = new AtomicInteger();
        AtomicReference<Exception> failure = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Long> lat = Collections.synchronizedList(new ArrayList<>(clients * threadsPer * cycles));
        List<Thread> threads = new ArrayList<>();
        for (InterProcessLock l : locks) {
            Thread t = new Thread(() -> {
                List<Long> mine = new ArrayList<>(cycles);
                try {
                    start.await();
                    for (int j = 0; j < cycles; j++) {
                        long t0 = System.nanoTime();
                        l.acquire();
                        mine.add(System.nanoTime() - t0);
                        if (exclusive) {
                            if (inside.incrementAndGet() > 1) {
                                violations.incrementAndGet();
                            }
                            inside.decrementAndGet();
                        }
                        l.release();
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                    return;
                }
                lat.addAll(mine);
            });
            threads.add(t);
            t.start();
        }
        long t0 = System.nanoTime();
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        for (CuratorFramework c : sessions) {
            c.close();
        }
        if (failure.get() != null) {
            failure.get().printStackTrace();
            System.exit(1);
        }

        Collections.sort(lat);
        int n = clients * threadsPer * cycles;
        String threadsField = threadsPer > 1 ? " threads=" + threadsPer : "";
        System.out.println(String.format(Locale.ROOT,
                "curator %s clients=%d%s cycles=%d secs=%.3f handoffs_per_s=%.1f p50_ms=%.3f p99_ms=%.3f violations=%d",
                recipe, clients, threadsField, cycles, secs, n / secs, ms(lat.get(n / 2)), ms(lat.get(n * 99 / 100)),
                violations.get()));
        System.exit(0);
    }

    private static InterProcessLock lock(CuratorFramework c, String recipe, String path) {
        switch (recipe) {
            case "mutex":
                return new InterProcessMutex(c, path);
            case "semmutex":
                return new InterProcessSemaphoreMutex(c, path);
            case "write":
                return new InterProcessReadWriteLock(c, path).writeLock();
            case "read":
                return new InterProcessReadWriteLock(c, path).readLock();
            default:
                throw new IllegalArgumentException("unknown recipe " + recipe + " (want mutex, semmutex, write or read)");
        }
    }

    private static double ms(long nanos) {
        return nanos / 1000 / 1e3; // whole microseconds, as examples/bench
    }
}
