// Interop contender: Apache Curator's InterProcessMutex on a lock path shared
// with zkrecipes' mutex and kazoo's Lock. Compiled and run by
// recipes_test/interop_test.go.
//
// Args: servers lockPath guardPath rounds holdMillis
// Prints one line per round: "hold <startUnixNanos> <endUnixNanos>", and
// "violation" when the guard node already existed (someone else inside).
import java.time.Instant;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class CuratorMutex {
  static long now() {
    Instant t = Instant.now();
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  public static void main(String[] a) throws Exception {
    String servers = a[0], lockPath = a[1], guard = a[2];
    int rounds = Integer.parseInt(a[3]);
    long holdMillis = Long.parseLong(a[4]);
    CuratorFramework cf = CuratorFrameworkFactory.newClient(servers, 30000, 15000, new ExponentialBackoffRetry(100, 5));
    cf.start();
    cf.blockUntilConnected();
    InterProcessMutex m = new InterProcessMutex(cf, lockPath);
    for (int i = 0; i < rounds; i++) {
      m.acquire();
      long start = now();
      try {
        cf.create().withMode(CreateMode.EPHEMERAL).forPath(guard);
      } catch (KeeperException.NodeExistsException e) {
        System.out.println("violation");
      }
      Thread.sleep(holdMillis);
      cf.delete().forPath(guard);
      long end = now();
      m.release();
      System.out.println("hold " + start + " " + end);
    }
    cf.close();
  }
}
