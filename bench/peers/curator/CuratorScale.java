// Curator's side of bench/scale's curator step (issue 18's flash sale):
// THREADS threads of one JVM, sharing one CuratorFramework (one session)
// and one InterProcessMutex on PATH, each acquiring it once and releasing
// it. bench/scale holds the lock from another session, measures the JVM
// from outside (/proc, the lock's node count) and kills it at its cap.
// Compiled at run time against Debian's jars with CuratorBench (see
// bench/README.md):
//
//   java -cp CLASSPATH CuratorScale SERVERS PATH THREADS
//
// Protocol on stdin and stdout: once the session is connected and one
// acquire and release on PATH-warm has loaded the classes a waiter uses, it
// prints "ready" and waits for a line on stdin; then it starts the threads.
// When every thread has released, it closes the session, prints
//
//   done acquired=K failed=F
//
// and, once stdin has another line or ends (so that the JVM can be measured
// before it exits), exits: 0, or 1 when a thread failed (its stack trace on
// stderr).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorScale {
    private static final int SESSION_TIMEOUT_MS = 30_000; // as bench/scale's sessions

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CuratorScale SERVERS PATH THREADS");
            System.exit(2);
        }
        String servers = args[0], path = args[1];
        int n = Integer.parseInt(args[2]);
        if (n < 1) {
            System.err.println("CuratorScale: THREADS must be at least 1");
            System.exit(2);
        }
        CuratorFramework c = CuratorFrameworkFactory.newClient(servers, SESSION_TIMEOUT_MS, 15_000,
                new RetryNTimes(3, 100));
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("did not connect to " + servers);
        }
        InterProcessMutex warm = new InterProcessMutex(c, path + "-warm");
        warm.acquire();
        warm.release();
        InterProcessMutex m = new InterProcessMutex(c, path);

        System.out.println("ready");
        System.out.flush();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        if (stdin.readLine() == null) {
            System.err.println("CuratorScale: stdin closed before the start");
            System.exit(1);
        }

        AtomicInteger acquired = new AtomicInteger(), failed = new AtomicInteger();
        List<Thread> threads = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Thread t = new Thread(() -> {
                try {
                    m.acquire();
                    acquired.incrementAndGet();
                    m.release();
                } catch (Exception e) {
                    if (failed.getAndIncrement() == 0) {
                        e.printStackTrace();
                    }
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        c.close();
        System.out.println("done acquired=" + acquired.get() + " failed=" + failed.get());
        System.out.flush();
        stdin.readLine();
        System.exit(failed.get() == 0 ? 0 : 1);
    }
}
