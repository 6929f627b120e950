// Interop contender: Apache Curator's InterProcessSemaphoreMutex (leases = 1)
// or InterProcessSemaphoreV2 on a path shared with zkrecipes'
// semaphoremutex. Compiled and run by semaphoremutex/interop_test.go.
//
// Args: servers path leases threads rounds holdMillis [v2]
// With leases = 1 it uses InterProcessSemaphoreMutex, unless "v2" is given.
// Each thread has its own client (session). Prints "ready" once every
// client is connected, then reads one line from stdin before starting, and
// one line per hold: "hold <startUnixNanos> <endUnixNanos> <token>", where
// token is the czxid of the hold's lease node, read with the raw client
// while holding (InterProcessSemaphoreMutex hides its lease: with one
// lease, the holder's is the oldest lease node).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorSemaphore {
  static long now() {
    Instant t = Instant.now();
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  public static void main(String[] a) throws Exception {
    String servers = a[0], path = a[1];
    int leases = Integer.parseInt(a[2]), threads = Integer.parseInt(a[3]), rounds = Integer.parseInt(a[4]);
    long holdMillis = Long.parseLong(a[5]);
    boolean v2 = a.length > 6 && a[6].equals("v2");
    List<Thread> ts = new ArrayList<>();
    List<Exception> errs = new ArrayList<>();
    CountDownLatch connected = new CountDownLatch(threads), go = new CountDownLatch(1);
    for (int t = 0; t < threads; t++) {
      Thread th = new Thread(() -> {
        CuratorFramework cf = CuratorFrameworkFactory.newClient(servers, 30000, 15000, new ExponentialBackoffRetry(100, 5));
        cf.start();
        try {
          cf.blockUntilConnected();
          connected.countDown();
          go.await();
          InterProcessSemaphoreMutex m = new InterProcessSemaphoreMutex(cf, path);
          InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(cf, path, leases);
          for (int i = 0; i < rounds; i++) {
            Lease l = null;
            if (leases == 1 && !v2) {
              m.acquire();
            } else {
              l = s.acquire();
            }
            long start = now();
            long token = -1;
            if (l != null) {
              String n = l.getNodeName();
              if (!n.startsWith("/")) {
                n = path + "/leases/" + n;
              }
              token = cf.checkExists().forPath(n).getCzxid();
            } else {
              // The holder's lease node is the oldest: a contender
              // checking under the internal lock may have made one since.
              List<String> ns = new ArrayList<>(cf.getChildren().forPath(path + "/leases"));
              ns.sort(java.util.Comparator.comparing((String n) -> n.substring(n.lastIndexOf('-') + 1)));
              token = cf.checkExists().forPath(path + "/leases/" + ns.get(0)).getCzxid();
            }
            Thread.sleep(holdMillis);
            long end = now();
            if (leases == 1 && !v2) {
              m.release();
            } else {
              s.returnLease(l);
            }
            synchronized (System.out) {
              System.out.println("hold " + start + " " + end + " " + token);
            }
          }
        } catch (Exception e) {
          synchronized (errs) {
            errs.add(e);
          }
        } finally {
          cf.close();
        }
      });
      th.start();
      ts.add(th);
    }
    connected.await();
    System.out.println("ready");
    System.out.flush();
    new BufferedReader(new InputStreamReader(System.in)).readLine();
    go.countDown();
    for (Thread th : ts) {
      th.join();
    }
    if (!errs.isEmpty()) {
      errs.get(0).printStackTrace();
      System.exit(1);
    }
  }
}
