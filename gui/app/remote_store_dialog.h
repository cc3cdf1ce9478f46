// RemoteStoreDialog: "Open remote store…": which store on another machine the runs list reads, the recent ones offered.
#pragma once

#include <optional>

#include <QDialog>
#include <QStringList>

#include "runs/remote_location.h"

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace trainbench::gui {

// The location as `[user@]host[:port]:/path/to/store` (an editable list of the recent ones,
// newest first) and the CLI's path on the host. OK stays off until the location parses; the
// line under it says why not. Object names: remoteStoreDialog, remoteLocationEdit,
// remoteCliEdit, remoteProblemLabel.
class RemoteStoreDialog : public QDialog {
    Q_OBJECT

public:
    explicit RemoteStoreDialog(QWidget* parent = nullptr);

    // The location chosen (valid once accepted).
    std::optional<RemoteLocation> location() const;
    void setLocationText(const QString& text);

    // The recent locations in the settings, newest first (at most kRecentCount), and adding one.
    static QList<RemoteLocation> recentLocations();
    static void rememberRecent(const RemoteLocation& location);
    static constexpr int kRecentCount = 8;

private:
    void check();

    QComboBox* location_ = nullptr;
    QLineEdit* cli_ = nullptr;
    QLabel* problem_ = nullptr;
    QDialogButtonBox* buttons_ = nullptr;
};

}  // namespace trainbench::gui
