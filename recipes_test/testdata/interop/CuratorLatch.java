import java.io.BufferedReader;
import java.io.InputStreamReader;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.retry.RetryNTimes;

// One Curator LeaderLatch participant, driven on stdin for the interop
// test: "state" prints "state <hasLeadership> <leader id or ->", "close"
// closes the latch and prints "closed". Exits on end of input.
// Args: servers path id sessionTimeoutMillis.
public class CuratorLatch {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(args[0])
            .sessionTimeoutMs(Integer.parseInt(args[3]))
            .connectionTimeoutMs(5000)
            .retryPolicy(new RetryNTimes(100, 100))
            .build();
        client.start();
        client.blockUntilConnected();
        LeaderLatch latch = new LeaderLatch(client, args[1], args[2]);
        latch.start();
        System.out.println("started");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("state")) {
                String who = "-";
                try {
                    String id = latch.getLeader().getId();
                    if (!id.isEmpty()) {
                        who = id;
                    }
                } catch (Exception e) {
                    who = "?";
                }
                System.out.println("state " + latch.hasLeadership() + " " + who);
            } else if (line.equals("close")) {
                latch.close();
                System.out.println("closed");
            }
            System.out.flush();
        }
        client.close();
    }
}
